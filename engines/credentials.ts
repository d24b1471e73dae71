import type { STSClient } from '@aws-sdk/client-sts';
import { randomBytes } from 'node:crypto';
import type { Config, EnvLookup } from '../infra/config';
import { registerSecret } from '../infra/redact';
import { awsEngineError, awsSecrets, type AwsCredentials } from './aws';
import { EngineError } from './errors';

export interface ApiKeyConfig {
  apiKey: string;
  baseUrl: string;
}

export interface BedrockServiceConfig {
  region: string;
  /** Explicit keys from the environment; undefined means the SDK's own provider chain (profile, web identity, container). */
  credentials?: AwsCredentials;
}

/** What the service itself can call, read once from the environment. A family absent here is unavailable. */
export interface ServiceCredentials {
  openai?: ApiKeyConfig;
  anthropic?: ApiKeyConfig;
  google?: ApiKeyConfig;
  bedrock?: BedrockServiceConfig;
  /** Test and private-link overrides of the AWS endpoints. */
  bedrockEndpoint?: string;
  stsEndpoint?: string;
}

export const DEFAULT_BASE_URLS = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
  google: 'https://generativelanguage.googleapis.com',
} as const;

/** Reads the service's provider keys, registering each with the redactor before anything can log it. */
export function readServiceCredentials(
  config: Pick<Config, 'QUORUM_BEDROCK_ENDPOINT' | 'QUORUM_STS_ENDPOINT'>,
  variable: EnvLookup,
): ServiceCredentials {
  const apiKey = (family: keyof typeof DEFAULT_BASE_URLS): ApiKeyConfig | undefined => {
    const prefix = `QUORUM_${family.toUpperCase()}`;
    const key = variable(`${prefix}_API_KEY`)?.trim();
    if (!key) return undefined;
    registerSecret(key);
    return { apiKey: key, baseUrl: variable(`${prefix}_BASE_URL`)?.trim() || DEFAULT_BASE_URLS[family] };
  };
  return {
    openai: apiKey('openai'),
    anthropic: apiKey('anthropic'),
    google: apiKey('google'),
    bedrock: bedrockFromEnv(variable),
    bedrockEndpoint: config.QUORUM_BEDROCK_ENDPOINT,
    stsEndpoint: config.QUORUM_STS_ENDPOINT,
  };
}

/** Bedrock counts as configured with a region plus one of the SDK's usual credential sources. */
function bedrockFromEnv(variable: EnvLookup): BedrockServiceConfig | undefined {
  const region = variable('AWS_REGION')?.trim() || variable('AWS_DEFAULT_REGION')?.trim();
  if (!region) return undefined;
  const accessKeyId = variable('AWS_ACCESS_KEY_ID')?.trim();
  const secretAccessKey = variable('AWS_SECRET_ACCESS_KEY')?.trim();
  if (accessKeyId && secretAccessKey) {
    const sessionToken = variable('AWS_SESSION_TOKEN')?.trim() || undefined;
    registerSecret(secretAccessKey);
    registerSecret(sessionToken);
    return { region, credentials: { accessKeyId, secretAccessKey, sessionToken } };
  }
  const chain = [
    'AWS_PROFILE',
    'AWS_WEB_IDENTITY_TOKEN_FILE',
    'AWS_CONTAINER_CREDENTIALS_FULL_URI',
    'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  ];
  return chain.some((name) => variable(name)?.trim()) ? { region } : undefined;
}

export interface RoleRef {
  roleArn: string;
  externalId: string;
  region: string;
}

/** Credentials are dropped this long before they expire, so a call never starts with nearly dead ones. */
const REFRESH_BEFORE_MS = 5 * 60_000;
/** One hour: the default maximum session of an IAM role, so no customer has to raise it. */
const SESSION_SECONDS = 3600;

interface Cached {
  creds: AwsCredentials;
  refreshAt: number;
}

/**
 * Assumes organisations' Bedrock roles with STS (RoleArn + ExternalId) using the service's own AWS
 * identity. The temporary credentials live only in this map, keyed by role and external id, until
 * five minutes before they expire; concurrent calls for one role share a single AssumeRole.
 */
export class RoleCredentialCache {
  private readonly cache = new Map<string, Cached>();
  private readonly inflight = new Map<string, Promise<AwsCredentials>>();
  private readonly clients = new Map<string, STSClient>();

  constructor(
    private readonly service: { credentials?: AwsCredentials; stsEndpoint?: string },
    private readonly now: () => number = Date.now,
  ) {}

  async get(role: RoleRef, ctx: { engineId: string; deadline: AbortSignal; signal?: AbortSignal }): Promise<AwsCredentials> {
    const key = `${role.roleArn}\n${role.externalId}`;
    const hit = this.cache.get(key);
    if (hit && hit.refreshAt > this.now()) return hit.creds;
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.assume(role, key, ctx).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  private async assume(
    role: RoleRef,
    key: string,
    ctx: { engineId: string; deadline: AbortSignal; signal?: AbortSignal },
  ): Promise<AwsCredentials> {
    const abortSignal = ctx.signal ? AbortSignal.any([ctx.deadline, ctx.signal]) : ctx.deadline;
    let out;
    try {
      // Loaded by the first role assumed: a process that never calls Bedrock with a customer's role never holds it.
      const sts = await import('@aws-sdk/client-sts');
      out = await this.client(role.region, sts.STSClient).send(
        new sts.AssumeRoleCommand({
          RoleArn: role.roleArn,
          ExternalId: role.externalId,
          RoleSessionName: `quorum-${randomBytes(6).toString('hex')}`,
          DurationSeconds: SESSION_SECONDS,
        }),
        { abortSignal },
      );
    } catch (err) {
      throw awsEngineError(err, { ...ctx, what: `assuming role ${role.roleArn}`, secrets: awsSecrets(this.service.credentials) });
    }
    const c = out.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken || !c.Expiration) {
      throw new EngineError('malformed', `${ctx.engineId}: STS AssumeRole answered without complete credentials`, {
        engineId: ctx.engineId,
      });
    }
    const creds: AwsCredentials = {
      accessKeyId: c.AccessKeyId,
      secretAccessKey: c.SecretAccessKey,
      sessionToken: c.SessionToken,
      expiration: c.Expiration,
    };
    this.cache.set(key, { creds, refreshAt: c.Expiration.getTime() - REFRESH_BEFORE_MS });
    return creds;
  }

  private client(region: string, Client: typeof STSClient): STSClient {
    let client = this.clients.get(region);
    if (!client) {
      // One attempt: the retry policy belongs to the workflow, which sees the classified error.
      client = new Client({ region, endpoint: this.service.stsEndpoint, credentials: this.service.credentials, maxAttempts: 1 });
      this.clients.set(region, client);
    }
    return client;
  }
}
