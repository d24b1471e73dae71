import type { ErrorCode } from './errors';

/**
 * A launch's admission, the first step of the run's own workflow (issue 26 item 5): its row and its up-front charge
 * are written in one transaction there, so no crash of the API can take the money without a run to spend it on.
 * Refused: nothing was written, and the launch answers with the code.
 */
export type RunAdmission = { admitted: true } | { refused: ErrorCode; message: string };
