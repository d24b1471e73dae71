import fs from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import { toClientOptions, type ClientConfigTLS, type ConfigDataSource } from '@temporalio/envconfig';
import type { Config } from './config';
import { registerSecret } from './redact';

/** What both `Connection.connect` (client) and `NativeConnection.connect` (worker) take to reach the cluster. */
export interface TemporalConnectOptions {
  address: string;
  tls?: TLSConfig | boolean | null;
  apiKey?: string;
}

type TlsFile = 'CLIENT_CERT' | 'CLIENT_KEY' | 'SERVER_CA_CERT';

/**
 * The one mapping from Temporal's client variables (validated by infra/config.ts) to connection options, for the
 * API, the worker, the CLI and waitForTemporal alike. The SDK's own `toClientOptions` applies
 * Temporal's rules (an API key turns TLS on unless TEMPORAL_TLS=false; any TLS setting turns it on); files are read
 * here, once, so a missing one fails the start naming its variable, and their contents go nowhere but the options.
 */
export function temporalConnectOptions(config: Config): TemporalConnectOptions {
  const address = config.TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEMPORAL_ADDRESS is not set');
  const tls: ClientConfigTLS = dropUndefined({
    disabled: config.TEMPORAL_TLS === undefined ? undefined : !config.TEMPORAL_TLS,
    serverName: config.TEMPORAL_TLS_SERVER_NAME,
    clientCert: tlsFile(config, 'CLIENT_CERT'),
    clientKey: tlsFile(config, 'CLIENT_KEY'),
    serverCACert: tlsFile(config, 'SERVER_CA_CERT'),
  });
  registerSecret(config.TEMPORAL_API_KEY);
  if (tls.clientKey && 'data' in tls.clientKey) registerSecret(Buffer.from(tls.clientKey.data).toString());
  const { connectionOptions } = toClientOptions({
    address,
    apiKey: config.TEMPORAL_API_KEY,
    tls: Object.keys(tls).length > 0 ? tls : undefined,
  });
  return dropUndefined({ address, tls: connectionOptions.tls, apiKey: config.TEMPORAL_API_KEY });
}

function tlsFile(config: Config, file: TlsFile): ConfigDataSource | undefined {
  const pathVariable = `TEMPORAL_TLS_${file}_PATH` as const;
  const filePath = config[pathVariable];
  if (filePath) {
    try {
      return { data: fs.readFileSync(filePath) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new Error(`${pathVariable}: cannot read ${filePath} (${code})`, { cause: err });
    }
  }
  const data = config[`TEMPORAL_TLS_${file}_DATA`];
  return data === undefined ? undefined : { data };
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
