import { EngineError, kindForStatus, retryAfterMs, type EngineErrorKind } from './errors';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** Secret parts of AWS credentials (the access key id is not secret: it is in every signed request). */
export function awsSecrets(creds: AwsCredentials | undefined): string[] {
  return creds ? [creds.secretAccessKey, ...(creds.sessionToken ? [creds.sessionToken] : [])] : [];
}

interface SdkErrorShape {
  name: string;
  message: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string | undefined> };
}

function asSdkError(err: unknown): SdkErrorShape {
  if (err instanceof Error) return err as Error & SdkErrorShape;
  return { name: 'Error', message: String(err) };
}

/**
 * Classifies an AWS SDK failure (Bedrock or STS) like the HTTP adapters do: by the HTTP status the
 * service answered, or, without one, as a timeout, a cancellation or a dropped connection.
 */
export function awsEngineError(
  err: unknown,
  ctx: { engineId: string; what: string; deadline: AbortSignal; signal?: AbortSignal; secrets: readonly string[] },
): EngineError {
  const e = asSdkError(err);
  const status = e.$metadata?.httpStatusCode;
  const make = (kind: EngineErrorKind, message: string, extra: { status?: number; retryAfterMs?: number } = {}): EngineError =>
    new EngineError(kind, `${ctx.engineId}: ${ctx.what} ${message}`, { ...extra, engineId: ctx.engineId, secrets: ctx.secrets });
  if (ctx.signal?.aborted) return make('aborted', 'cancelled by the caller');
  if (ctx.deadline.aborted) return make('timeout', 'got no answer before the deadline');
  if (status === undefined) return make('connection', `failed: ${e.name}: ${e.message}`);
  // A 2xx that the SDK could not deserialise: the body was not what the protocol promises.
  if (status >= 200 && status < 300)
    return make('malformed', `answered ${status} with a body that could not be read (${e.name})`, { status });
  const headers = e.$response?.headers ?? {};
  return make(kindForStatus(status), `answered ${status}: ${e.name}: ${e.message}`, {
    status,
    retryAfterMs: retryAfterMs((name) => headers[name]),
  });
}
