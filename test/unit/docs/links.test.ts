import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The README stays one screen and every relative link in it and in docs/ resolves: the file exists (relative to the
 * linking file) and a `#anchor` names a heading of the target, slugged as GitHub does. Pure: reads files only.
 */
const ROOT = path.join(__dirname, '..', '..', '..');

/** What the checker reads: the real files, or a fake in the checker's own tests. */
interface Files {
  exists(abs: string): boolean;
  read(abs: string): string;
}

const disk: Files = {
  exists: (abs) => fs.existsSync(abs),
  read: (abs) => fs.readFileSync(abs, 'utf8'),
};

/** The lines outside fenced code blocks (``` or ~~~), each with its 1-based line number. */
function proseLines(text: string): { line: string; n: number }[] {
  const out: { line: string; n: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (open && open[1]?.[0] === fence[0] && (open[1]?.length ?? 0) >= fence.length && line.trim() === open[1]) fence = undefined;
      return;
    }
    if (open) {
      fence = open[1];
      return;
    }
    out.push({ line, n: i + 1 });
  });
  return out;
}

/** GitHub's heading slug: inline markup dropped, lowercased, every character but letters, digits, `_`, `-` and spaces removed, spaces → `-`. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a markdown file defines: its headings' slugs (repeats get -1, -2, as on GitHub) and explicit ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const add = (heading: string): void => {
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  };
  const lines = proseLines(text);
  lines.forEach(({ line, n }, i) => {
    const atx = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (atx) add(atx[1] ?? '');
    const previous = lines[i - 1];
    if (
      /^ {0,3}(=+|-+)\s*$/.test(line) &&
      previous &&
      previous.n === n - 1 &&
      previous.line.trim() !== '' &&
      !/^\s*[-*+|]/.test(previous.line)
    ) {
      add(previous.line.trim());
    }
    for (const m of line.matchAll(/<a\s[^>]*(?:name|id)="([^"]+)"/g)) anchors.add(m[1] ?? '');
  });
  return anchors;
}

/** Every link target in a markdown file's prose: inline `[text](target)`, images, and reference definitions. */
function linksOf(text: string): { target: string; n: number }[] {
  const links: { target: string; n: number }[] = [];
  for (const { line, n } of proseLines(text)) {
    const prose = line.replace(/(`+)[^`]*?\1/g, '');
    for (const m of prose.matchAll(/\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+["'(][^)]*)?\)/g)) links.push({ target: m[1] ?? '', n });
    const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(prose);
    if (definition) links.push({ target: definition[1] ?? '', n });
  }
  return links;
}

/** Each relative link of `file` (absolute) that does not resolve, as `file:line: target (why)`. */
function brokenLinks(file: string, files: Files = disk): string[] {
  const broken: string[] = [];
  const where = (n: number): string => `${path.relative(ROOT, file)}:${n}`;
  for (const { target, n } of linksOf(files.read(file))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // http(s):, mailto: and other schemes
    if (target === '') {
      broken.push(`${where(n)}: empty link target`);
      continue;
    }
    const hash = target.indexOf('#');
    const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const resolved =
      pathPart === '' ? file : pathPart.startsWith('/') ? path.join(ROOT, pathPart) : path.resolve(path.dirname(file), pathPart);
    if (!files.exists(resolved)) {
      broken.push(`${where(n)}: ${target} (no such file: ${path.relative(ROOT, resolved)})`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!resolved.endsWith('.md')) {
      if (!/^L\d+(-L\d+)?$/.test(anchor)) broken.push(`${where(n)}: ${target} (an anchor into a file that has no headings)`);
      continue;
    }
    const anchors = anchorsOf(files.read(resolved));
    if (!anchors.has(anchor)) {
      broken.push(
        `${where(n)}: ${target} (no heading #${anchor} in ${path.relative(ROOT, resolved)}; it has ${[...anchors].map((a) => `#${a}`).join(', ')})`,
      );
    }
  }
  return broken;
}

/** README.md and every markdown file under docs/. */
function markdownFiles(): string[] {
  const under = (dir: string): string[] =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      .flatMap((e) => (e.isDirectory() ? under(path.join(dir, e.name)) : e.name.endsWith('.md') ? [path.join(dir, e.name)] : []));
  return [path.join(ROOT, 'README.md'), ...under(path.join(ROOT, 'docs'))];
}

/** A fake file system for the checker's own tests. */
function fake(tree: Record<string, string>): Files {
  const abs = new Map(Object.entries(tree).map(([p, text]) => [path.join(ROOT, p), text]));
  return {
    exists: (p) => abs.has(p) || [...abs.keys()].some((k) => k.startsWith(p + path.sep)),
    read: (p) => {
      const text = abs.get(p);
      if (text === undefined) throw new Error(`no ${p}`);
      return text;
    },
  };
}

describe('documentation links', () => {
  describe('the checker', () => {
    it('slugs headings as GitHub does', () => {
      assert.equal(slug('The MCP server (`/mcp`)'), 'the-mcp-server-mcp');
      assert.equal(slug('Performance (DESIGN §13, issue 16)'), 'performance-design-13-issue-16');
      assert.equal(slug("The mode advisor (Form B's `ask_advisor`)"), 'the-mode-advisor-form-bs-ask_advisor');
      assert.equal(slug('Connected apps (OAuth 2.1)'), 'connected-apps-oauth-21');
      assert.equal(slug('A — B'), 'a--b');
      assert.equal(slug('See [the docs](docs/x.md)'), 'see-the-docs');
    });

    it('passes links that resolve and skips external ones', () => {
      const files = fake({
        'README.md': [
          '# Title',
          '[a](docs/a.md) [b](docs/a.md#second-part) [self](#title) [web](https://example.com/x.md) [mail](mailto:x@y.z)',
          '![img](docs/a.md) [dir](docs)',
          '[ref]: docs/a.md#first',
        ].join('\n'),
        'docs/a.md': '# First\n\ntext\n\n## Second part\n\n[back](../README.md#title)\n',
      });
      assert.deepEqual(brokenLinks(path.join(ROOT, 'README.md'), files), []);
      assert.deepEqual(brokenLinks(path.join(ROOT, 'docs/a.md'), files), []);
    });

    it('reports a missing file, a missing heading and a missing same-file anchor, with their lines', () => {
      const files = fake({
        'README.md': '# Title\n\n[gone](docs/gone.md)\n[bad](docs/a.md#nope)\n[self](#nowhere)\n',
        'docs/a.md': '# First\n',
      });
      const broken = brokenLinks(path.join(ROOT, 'README.md'), files);
      assert.equal(broken.length, 3, broken.join('\n'));
      assert.match(broken[0] ?? '', /^README\.md:3: docs\/gone\.md \(no such file/);
      assert.match(broken[1] ?? '', /^README\.md:4: docs\/a\.md#nope \(no heading #nope/);
      assert.match(broken[2] ?? '', /^README\.md:5: #nowhere \(no heading #nowhere/);
    });

    it('resolves a link relative to the linking file, not to the repository root', () => {
      const files = fake({ 'docs/a.md': '[b](docs/b.md)\n', 'docs/b.md': '# B\n' });
      assert.equal(brokenLinks(path.join(ROOT, 'docs/a.md'), files).length, 1);
    });

    it('ignores links and headings inside code', () => {
      const files = fake({
        'README.md':
          '# Title\n\n```sh\n# not a heading\necho "[x](missing.md)"\n```\n\n`[y](missing.md)` [z](#title)\n[w](#not-a-heading)\n',
      });
      const broken = brokenLinks(path.join(ROOT, 'README.md'), files);
      assert.equal(broken.length, 1, broken.join('\n'));
      assert.match(broken[0] ?? '', /#not-a-heading/);
    });
  });

  describe('README.md and docs/', () => {
    const files = markdownFiles();

    it('finds the README and the docs', () => {
      assert.ok(files.length > 1, `only ${files.join(', ')}`);
    });

    for (const file of files) {
      it(`every relative link in ${path.relative(ROOT, file)} resolves`, () => {
        const broken = brokenLinks(file);
        assert.deepEqual(broken, [], `broken links:\n  ${broken.join('\n  ')}`);
      });
    }

    it('every file under docs/ is reachable by links from the README', () => {
      const reached = new Set<string>();
      const visit = (file: string): void => {
        if (reached.has(file) || !file.endsWith('.md') || !fs.existsSync(file)) return;
        reached.add(file);
        for (const { target } of linksOf(fs.readFileSync(file, 'utf8'))) {
          if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
          const pathPart = decodeURIComponent(target.split('#')[0] ?? '');
          visit(path.resolve(path.dirname(file), pathPart));
        }
      };
      visit(path.join(ROOT, 'README.md'));
      const orphans = files.filter((f) => !reached.has(f)).map((f) => path.relative(ROOT, f));
      assert.deepEqual(orphans, [], 'docs no link from the README leads to');
    });
  });

  describe('README.md', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

    it('fits one screen: at most 100 lines', () => {
      const lines = readme.endsWith('\n') ? readme.slice(0, -1).split('\n') : readme.split('\n');
      assert.ok(lines.length <= 100, `README.md has ${lines.length} lines`);
    });

    it('opens with the two commands, verbatim', () => {
      assert.ok(readme.includes('npm ci && npm start'), 'README.md lost `npm ci && npm start`');
      assert.ok(readme.includes('npm ci && npm test'), 'README.md lost `npm ci && npm test`');
      const firstBlock = /```[^\n]*\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
      const commands = firstBlock.split('\n').filter((l) => l.trim() !== '');
      assert.match(commands[0] ?? '', /^npm ci && npm start\b/, 'the first command shown is not `npm ci && npm start`');
      assert.match(commands[1] ?? '', /^npm ci && npm test\b/, 'the second command shown is not `npm ci && npm test`');
    });
  });
});
