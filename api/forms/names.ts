import type { ModeRecord } from '../../domain/modes';
import type { Bucket } from '../../domain/questions/types';

/** How a Form names the run resources' buckets (`light` or `easy`) and a mode (`id` or ticker). */
export interface RunNames {
  bucket: Readonly<Record<Bucket, string>>;
  modeKey(mode: Pick<ModeRecord, 'id' | 'ticker'>): string;
}
