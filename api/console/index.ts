import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import fs from 'node:fs';
import type { Context, Next } from 'koa';
import helmet from 'koa-helmet';
import { QuorumError } from '../../domain/errors';
import type { RouteDeps } from '../http/context';
import { html } from '../http/html';
import { page } from './layout';
import { accountPages } from './pages/account';
import { activityPages } from './pages/activity';
import { keyPages } from './pages/keys';
import { alertPages } from './pages/alerts';
import { authPages } from './pages/auth';
import { authorizePages } from './pages/authorize';
import { connectedAppPages } from './pages/connected-apps';
import { modePages } from './pages/modes';
import { receiptPages } from './pages/receipts';
import { runPages } from './pages/runs';
import { ConsoleRefusal, consoleSession, RedirectDone } from './session';
import { CONSOLE_CSS } from './styles';

/**
 * The web console at `/console` (DESIGN §14): server-rendered pages from Koa, htmx where a page updates itself
 * (live validation, run progress). A separate edge: it takes a signed-in session and never a bearer key, as `/v1`
 * takes a bearer key and never a session. Security headers come from helmet with a CSP that allows only our own
 * scripts and styles (no inline script, nothing from outside the machine).
 */

/** The copy buttons' only behaviour; served as a file so the CSP can forbid inline script. */
const CONSOLE_JS = `document.addEventListener('click', (e) => {
  const b = e.target.closest('[data-copy]');
  if (!b) return;
  const el = document.getElementById(b.dataset.copy);
  if (el) navigator.clipboard.writeText(el.textContent.trim()).then(() => { b.textContent = 'Copied'; });
});`;

const HTMX = fs.readFileSync(require.resolve('htmx.org/dist/htmx.min.js'), 'utf8');

function asset(body: string, type: string) {
  return (ctx: Context): void => {
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = body;
  };
}

/** Errors become pages (or, for htmx fragments, a message in place), with the status they carry. */
function consoleErrors(deps: RouteDeps) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
    } catch (err) {
      if (err instanceof RedirectDone) return;
      const known =
        err instanceof ConsoleRefusal ? err : err instanceof QuorumError ? new ConsoleRefusal(err.spec.status, err.message) : undefined;
      if (!known) deps.log.error('console request failed', { path: ctx.path, err });
      ctx.status = known?.status ?? 500;
      const message = known?.message ?? 'Something went wrong on our side. Try again; nothing was half-done.';
      const code = err instanceof QuorumError ? err.code : undefined;
      if (ctx.get('hx-request')) {
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = html`<p class="flash error" role="alert">${message}${code ? html` (<code>${code}</code>)` : ''}</p>`.value;
        return;
      }
      page(
        ctx,
        ctx.status === 404 ? 'Not found' : ctx.status === 403 ? 'Not allowed' : ctx.status === 401 ? 'Sign in needed' : 'Could not do that',
        html``,
        {
          error: code ? `${message} (${code})` : message,
        },
      );
    }
  };
}

export function consoleRouter(deps: RouteDeps): Router {
  const router = new Router({ prefix: '/console' });
  router.get('/assets/console.css', asset(CONSOLE_CSS, 'text/css; charset=utf-8'));
  router.get('/assets/console.js', asset(CONSOLE_JS, 'text/javascript; charset=utf-8'));
  router.get('/assets/htmx.min.js', asset(HTMX, 'text/javascript; charset=utf-8'));
  router.use(
    helmet({
      contentSecurityPolicy: {
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'"],
          imgSrc: ["'self'", 'data:'],
          formAction: ["'self'"],
          frameAncestors: ["'none'"],
        },
      },
      strictTransportSecurity: deps.secureCookies,
      // Not helmet's `no-referrer`: under it a browser posts a form with `Origin: null`, which the Origin check refuses.
      referrerPolicy: { policy: 'same-origin' },
    }),
  );
  router.use(async (ctx, next) => {
    // Pages hold balances and keys: never cached, never framed.
    ctx.set('Cache-Control', 'no-store');
    await next();
  });
  router.use(consoleErrors(deps));
  router.use(bodyParser({ enableTypes: ['form', 'json'], formLimit: '300kb', jsonLimit: '300kb' }));
  router.use(consoleSession(deps, { secureCookies: deps.secureCookies }));
  authPages(router, deps);
  authorizePages(router, deps);
  connectedAppPages(router, deps);
  accountPages(router, deps);
  keyPages(router, deps);
  activityPages(router, deps);
  alertPages(router, deps);
  modePages(router, deps);
  receiptPages(router, deps);
  runPages(router, deps);
  return router;
}
