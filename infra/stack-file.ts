import fs from 'node:fs';
import { z } from 'zod';
import { stackFile } from './paths';

/** What `npm start` publishes while it runs, so the CLI and other tools reach the same stack. */
const StackInfo = z.object({
  databaseUrl: z.string(),
  temporalAddress: z.string(),
  namespace: z.string(),
  apiUrl: z.string(),
  /** Every API process's address (`npm run start:cluster` runs several); `apiUrl` is the first. */
  apiUrls: z.array(z.string()).optional(),
  pid: z.number().int(),
});
export type StackInfo = z.infer<typeof StackInfo>;

export function writeStackFile(info: StackInfo): void {
  fs.writeFileSync(stackFile, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
}

export function removeStackFile(): void {
  fs.rmSync(stackFile, { force: true });
}

/** The running stack's addresses (its file in this process's data folder, or `file`), or undefined when no `npm start` is alive. */
export function readStackFile(file: string = stackFile): StackInfo | undefined {
  try {
    const info = StackInfo.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
    process.kill(info.pid, 0); // throws when that supervisor is gone
    return info;
  } catch {
    return undefined;
  }
}
