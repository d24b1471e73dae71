import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

/**
 * A real headless Chromium for browser tests: Debian's `chromium` driven by playwright-core (playwright's own browser
 * download cannot run where only package registries are reachable; Debian's mirror can).
 *
 * Finding the browser: scripts/ensure-chromium.sh, run once per process, prints the path of `$QUORUM_CHROMIUM_PATH`
 * or of a `chromium` on PATH, and installs Debian's package with apt-get when there is none and we are root (about
 * 40 s on a fresh Debian). Without a browser every browser test fails with the script's message: never a skip.
 *
 * Sharing: one browser per mocha run, the same way test/harness/stack.ts starts its stack. The first import of this
 * module registers a root `before` that finds (or installs) and launches the browser under a long timeout, a root
 * `afterEach` that closes the contexts the test opened, and a root `after` that closes the browser. A run that loads
 * no browser test never imports this module and launches nothing. Each `newPage()` opens a fresh BrowserContext, so
 * cookies and storage never leak from one test (or one page) to another. Outside mocha, `launchBrowser()` gives a
 * browser the caller closes.
 */

const ROOT = path.join(__dirname, '..', '..');
const ENSURE_SCRIPT = path.join(ROOT, 'scripts', 'ensure-chromium.sh');
/** Full-page screenshots for review; test-output/ is ignored by git. */
export const SCREENSHOT_DIR = path.join(ROOT, 'test-output', 'screenshots');
/** A first run may apt-get install Chromium and its ~330 packages (about 40 s here; mirrors vary). */
const ENSURE_TIMEOUT_MS = 10 * 60_000;
/** Playwright's per-action default is 30 s; fail a stuck click or wait well inside mocha's 120 s test timeout. */
const ACTION_TIMEOUT_MS = 15_000;
const LAUNCH_ARGS = ['--no-sandbox', '--disable-dev-shm-usage'];

let executable: Promise<string> | undefined;

/** The Chromium executable, from scripts/ensure-chromium.sh (which may install it); found once per process. */
export function chromiumPath(): Promise<string> {
  executable ??= runEnsureScript();
  return executable;
}

function runEnsureScript(): Promise<string> {
  return new Promise((resolve, reject) => {
    // Async, not spawnSync: a minute of apt must not freeze the event loop of a test process that may already hold
    // a Temporal client and a db pool. Its stderr is passed on as it comes (so "installing…" shows while apt works)
    // and kept for the error, which a long run prints far below the start.
    const child = spawn('bash', [ENSURE_SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'], timeout: ENSURE_TIMEOUT_MS });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      process.stderr.write(d);
      stderr += d.toString();
    });
    child.once('error', (err) => reject(new Error(`browser tests: cannot run ${ENSURE_SCRIPT}: ${err.message}`, { cause: err })));
    child.once('close', (status, signal) => {
      const found = stdout.trim().split('\n').pop()?.trim();
      if (status === 0 && found) return resolve(found);
      const why = signal ? `was killed (${signal}) after the ${ENSURE_TIMEOUT_MS / 60_000} min limit` : `exited ${status}`;
      const advice =
        "install Debian's chromium (as root: apt-get install -y chromium) or set QUORUM_CHROMIUM_PATH to a Chromium executable";
      reject(new Error(`browser tests need Chromium: ${path.relative(ROOT, ENSURE_SCRIPT)} ${why}: ${stderr.trim() || advice}`));
    });
  });
}

/** A new headless Chromium the caller closes. Throws (never skips) if none can be found, installed or started. */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = await chromiumPath();
  try {
    return await chromium.launch({ executablePath, headless: true, args: LAUNCH_ARGS });
  } catch (err) {
    throw new Error(`browser tests: ${executablePath} did not start headless under playwright-core: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

let shared: Promise<Browser> | undefined;
const openContexts = new Set<BrowserContext>();

/** The browser shared by this mocha run, launched on first use (the root hook below launches it early). */
export function sharedBrowser(): Promise<Browser> {
  if (shared) return shared;
  const launching = launchBrowser();
  shared = launching;
  const forget = () => {
    if (shared === launching) shared = undefined;
  };
  // Neither a failed launch nor a crashed browser is kept: the next test launches again (or reports why it cannot).
  launching.then((browser) => browser.once('disconnected', forget), forget);
  return launching;
}

/**
 * A page in a fresh BrowserContext of the shared browser: no cookies, storage or cache from any other page. The root
 * afterEach closes it with its context when the test ends; close it sooner with `page.context().close()`.
 */
export async function newPage(options: BrowserContextOptions = {}): Promise<Page> {
  const context = await (await sharedBrowser()).newContext(options);
  openContexts.add(context);
  context.once('close', () => openContexts.delete(context));
  context.setDefaultTimeout(ACTION_TIMEOUT_MS);
  return context.newPage();
}

/**
 * A full-page PNG at test-output/screenshots/<name>.png (folders in `name` allowed: `console/login`); returns its
 * path.
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  if (!/^[\w-]+(\/[\w-]+)*$/.test(name))
    throw new Error(`screenshot name ${JSON.stringify(name)}: use letters, digits, - and _, with / between folders`);
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

async function closeOpenContexts(): Promise<void> {
  await Promise.all([...openContexts].map((c) => c.close().catch(() => undefined)));
  openContexts.clear();
}

async function closeSharedBrowser(): Promise<void> {
  const browser = shared;
  shared = undefined;
  await closeOpenContexts();
  await (await browser?.catch(() => undefined))?.close();
}

if (typeof before === 'function' && typeof after === 'function' && typeof afterEach === 'function') {
  before('find or install Chromium and launch it headless', async function (this: Mocha.Context) {
    // On a nested suite the browser would close after that suite while later files still use it: refuse, as
    // test/harness/stack.ts does.
    if (this.test?.parent?.root !== true)
      throw new Error('test/harness/browser.ts must be imported at the top level of a test file, not inside a describe');
    this.timeout(ENSURE_TIMEOUT_MS + 60_000);
    // A failure here is left to the browser tests (each fails with this error through newPage) rather than failing
    // the root hook, which would stop every other test of the run too.
    await sharedBrowser().catch(() => undefined);
  });
  afterEach('close the browser contexts of the test', closeOpenContexts);
  after('close the browser', async function (this: Mocha.Context) {
    this.timeout(30_000);
    await closeSharedBrowser();
  });
}
