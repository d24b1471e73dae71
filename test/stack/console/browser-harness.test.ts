import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { newPage, screenshot, sharedBrowser } from '../../harness/browser';

/**
 * The browser harness itself, against a plain node:http server: a real headless Chromium fills and submits a form,
 * the page the server returns is read back, a screenshot lands under test-output/, and a cookie set in one test is
 * absent from the next one's fresh context.
 */

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;

const FORM = page(
  'Sign the guest book',
  `<h1>Sign the guest book</h1>
  <form method="post" action="/sign">
    <label>Name <input name="name" required></label>
    <label>Note <textarea name="note"></textarea></label>
    <button type="submit">Sign</button>
  </form>`,
);

interface Posted {
  contentType: string | undefined;
  body: string;
}

describe('browser harness: headless Chromium through playwright-core', () => {
  let server: http.Server;
  let base: string;
  const posted: Posted[] = [];

  before(async () => {
    server = http.createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(FORM);
        return;
      }
      if (req.method === 'POST' && req.url === '/sign') {
        let body = '';
        req.setEncoding('utf8');
        req.on('data', (d: string) => (body += d));
        req.on('end', () => {
          posted.push({ contentType: req.headers['content-type'], body });
          const form = new URLSearchParams(body);
          const name = form.get('name') ?? '';
          res
            .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'set-cookie': 'signed=1; Path=/; HttpOnly; SameSite=Lax' })
            .end(page('Signed', `<h1>Thank you, ${escapeHtml(name)}</h1><p id="note">${escapeHtml(form.get('note') ?? '')}</p>`));
        });
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('fills and submits a form, reads the page the server returns, and screenshots it', async () => {
    const tab = await newPage();
    await tab.goto(`${base}/`);
    assert.equal(await tab.title(), 'Sign the guest book');

    await tab.getByLabel('Name').fill('Ada <Lovelace> & co');
    await tab.getByLabel('Note').fill('first line\nsecond line');
    await Promise.all([tab.waitForURL(`${base}/sign`), tab.getByRole('button', { name: 'Sign' }).click()]);

    assert.equal(posted.length, 1);
    assert.equal(posted[0].contentType, 'application/x-www-form-urlencoded');
    assert.equal(await tab.title(), 'Signed');
    assert.equal(await tab.locator('h1').textContent(), 'Thank you, Ada <Lovelace> & co');
    // A browser sends a textarea's line breaks as CRLF.
    assert.equal(new URLSearchParams(posted[0].body).get('note'), 'first line\r\nsecond line');
    assert.equal(await tab.locator('#note').textContent(), 'first line\nsecond line');
    assert.deepEqual(
      (await tab.context().cookies()).map((c) => [c.name, c.value]),
      [['signed', '1']],
    );

    const file = await screenshot(tab, 'harness/form-submitted');
    const png = fs.readFileSync(file);
    assert.ok(png.length > 1_000, `screenshot ${file} is only ${png.length} bytes`);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG signature');
  });

  it("gives every page a fresh context: no cookie from another page or test, and the last test's contexts closed", async () => {
    // The first test's context (with its cookie) was closed by the harness's afterEach.
    assert.equal((await sharedBrowser()).contexts().length, 0);

    const first = await newPage();
    await first.goto(`${base}/`);
    await first.getByLabel('Name').fill('Grace');
    await Promise.all([first.waitForURL(`${base}/sign`), first.getByRole('button', { name: 'Sign' }).click()]);
    assert.equal((await first.context().cookies()).length, 1);

    const second = await newPage();
    await second.goto(`${base}/`);
    assert.deepEqual(await second.context().cookies(), []);
  });
});
