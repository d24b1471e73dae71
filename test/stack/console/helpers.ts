import assert from 'node:assert/strict';
import type { Api } from '../api/helpers';

/**
 * A console visitor over plain HTTP: keeps its cookies like a browser (per path), reads each page's CSRF token, and
 * posts forms the way a browser does. The browser tests drive real Chromium; these drive the rules underneath.
 */
export class Visitor {
  private readonly cookies = new Map<string, string>();
  csrf = '';

  constructor(readonly api: Api) {}

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  private remember(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    return { ...(cookie ? { cookie } : {}), ...extra };
  }

  async get(path: string, extra: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Headers }> {
    const res = await fetch(this.api.url + path, { headers: this.headers(extra), redirect: 'manual' });
    this.remember(res);
    const body = await res.text();
    const token = /name="_csrf" value="([^"]+)"/.exec(body);
    if (token) this.csrf = token[1];
    return { status: res.status, body, headers: res.headers };
  }

  /** Posts a form with this page's CSRF token unless `csrf: false`; follows nothing. */
  async post(
    path: string,
    fields: Record<string, string | string[]>,
    opts: { csrf?: boolean; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: string; location: string | null }> {
    const form = new URLSearchParams();
    if (opts.csrf !== false) form.append('_csrf', this.csrf);
    for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) form.append(k, one);
    const res = await fetch(this.api.url + path, {
      method: 'POST',
      headers: this.headers({ 'content-type': 'application/x-www-form-urlencoded', ...(opts.headers ?? {}) }),
      body: form.toString(),
      redirect: 'manual',
    });
    this.remember(res);
    return { status: res.status, body: await res.text(), location: res.headers.get('location') };
  }

  /** Signs up with a fresh organisation; returns the email used. */
  async signUp(fields: { name?: string; email: string; password: string; org?: string }): Promise<void> {
    await this.get('/console/sign-up');
    const res = await this.post('/console/sign-up', { name: fields.name ?? 'Test Person', org: fields.org ?? 'Test Org', ...fields });
    assert.equal(res.status, 302, res.body.slice(0, 2000));
  }

  async signIn(email: string, password: string): Promise<{ status: number; body: string; location: string | null }> {
    await this.get('/console/sign-in');
    return this.post('/console/sign-in', { email, password });
  }
}
