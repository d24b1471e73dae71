import path from 'node:path';

/** Recorded workflow histories (protobuf) that the replay guard replays against today's workflow code. */
export const historiesDir = path.join(__dirname, '..', 'histories');
