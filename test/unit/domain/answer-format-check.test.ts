import assert from 'node:assert/strict';
import { z } from 'zod';
import { answerFormatProblem, schemaProblem } from '../../../domain/answer-format-check';
import type { AnswerFormat } from '../../../domain/answer-options';
import type { JsonSchema } from '../../../domain/reply-schemas';

/**
 * Issue 53 item 2: a caller's JSON Schema of draft-07 or 2020-12, with or without `$schema`, as the schema libraries
 * people use write it (zod 4's `z.toJSONSchema` in both targets; pydantic's shape, written out), compiles, and an
 * answer is checked in the dialect it declares; an unknown `$schema` is refused naming it.
 */
const Address = z.object({ street: z.string(), zip: z.string().optional() });
const Person = z
  .object({
    name: z.string().describe('Full name'),
    age: z.number().int().positive(),
    email: z.email(),
    tags: z.array(z.string()).default([]),
    nick: z.string().nullable(),
    kind: z.enum(['a', 'b']),
    home: Address,
    work: Address,
    pair: z.tuple([z.string(), z.number()]),
  })
  .meta({ title: 'Person' });

const asSchema = (s: unknown): JsonSchema => s as JsonSchema;
const ZOD_2020 = asSchema(z.toJSONSchema(Person, { reused: 'ref' }));
const ZOD_07 = asSchema(z.toJSONSchema(Person, { reused: 'ref', target: 'draft-7' }));

/** What pydantic v2's `model_json_schema()` writes for such a model: no `$schema`, `$defs`, `anyOf` with null, titles. */
const PYDANTIC = asSchema({
  $defs: {
    Address: {
      properties: {
        street: { title: 'Street', type: 'string' },
        zip: { anyOf: [{ type: 'string' }, { type: 'null' }], default: null, title: 'Zip' },
      },
      required: ['street'],
      title: 'Address',
      type: 'object',
    },
  },
  properties: {
    name: { description: 'Full name', title: 'Name', type: 'string' },
    age: { exclusiveMinimum: 0, title: 'Age', type: 'integer' },
    email: { format: 'email', title: 'Email', type: 'string' },
    nick: { anyOf: [{ type: 'string' }, { type: 'null' }], title: 'Nick' },
    home: { $ref: '#/$defs/Address' },
    pair: { maxItems: 2, minItems: 2, prefixItems: [{ type: 'string' }, { type: 'number' }], title: 'Pair', type: 'array' },
  },
  required: ['name', 'age', 'email', 'nick', 'home', 'pair'],
  title: 'Person',
  type: 'object',
});

const GOOD = {
  name: 'Ada',
  age: 36,
  email: 'ada@example.com',
  tags: [],
  nick: null,
  kind: 'a',
  home: { street: 'St James' },
  work: { street: 'Strand', zip: 'WC2' },
  pair: ['x', 1],
};

const format = (schema: JsonSchema): AnswerFormat => ({ type: 'json_schema', name: 'person', schema, strict: true });
const check = (schema: JsonSchema, value: unknown): string | undefined => answerFormatProblem(JSON.stringify(value), format(schema));

describe('JSON Schema dialects: drafts 07 and 2020-12, with or without $schema (issue 53 item 2)', () => {
  it('what zod 4 writes, in each target, declares its dialect', () => {
    assert.equal(ZOD_2020.$schema, 'https://json-schema.org/draft/2020-12/schema');
    assert.equal(ZOD_07.$schema, 'http://json-schema.org/draft-07/schema#');
    assert.ok(JSON.stringify(ZOD_2020).includes('"$defs"') && JSON.stringify(ZOD_2020).includes('"prefixItems"'));
    assert.ok(JSON.stringify(ZOD_07).includes('"definitions"'));
  });

  for (const [name, schema] of [
    ['zod 4, 2020-12', ZOD_2020],
    ['zod 4, draft-07', ZOD_07],
    ['pydantic, no $schema', PYDANTIC],
  ] as const) {
    it(`${name}: compiles; a valid answer passes; a wrong one is named by where it is wrong`, () => {
      assert.equal(schemaProblem(schema), undefined);
      assert.equal(check(schema, GOOD), undefined);
      assert.match(check(schema, { ...GOOD, age: 0 }) ?? '', /\/age must be > 0/);
      assert.match(check(schema, { ...GOOD, nick: 3 }) ?? '', /\/nick/);
      assert.match(check(schema, { ...GOOD, home: { zip: 'x' } }) ?? '', /\/home must have required property 'street'/);
      // The tuple is read as its dialect writes it: prefixItems in 2020-12, an `items` array in draft-07.
      assert.match(check(schema, { ...GOOD, pair: [1, 'x'] }) ?? '', /\/pair\/0 must be string/);
    });
  }

  it('zod 4 output without its $schema is read as 2020-12, and a draft-07 tuple without one as draft-07', () => {
    const bare = (schema: JsonSchema): JsonSchema => Object.fromEntries(Object.entries(schema).filter(([k]) => k !== '$schema'));
    for (const schema of [bare(ZOD_2020), bare(ZOD_07)]) {
      assert.equal(schemaProblem(schema), undefined);
      assert.equal(check(schema, GOOD), undefined);
      assert.match(check(schema, { ...GOOD, pair: [1, 'x'] }) ?? '', /\/pair\/0 must be string/);
    }
  });

  it('additionalProperties: false, title, description, default, format: read as the dialect defines them', () => {
    assert.match(check(ZOD_2020, { ...GOOD, extra: 1 }) ?? '', /additional properties/);
    // Formats are not checked (validateFormats: false): a schema with an unknown one still compiles.
    assert.equal(schemaProblem({ type: 'string', format: 'no-such-format', title: 't', description: 'd', default: 'x' }), undefined);
  });

  it('each spelling of a known $schema URI is that dialect; 2019-09 too', () => {
    for (const uri of [
      'http://json-schema.org/draft-07/schema#',
      'http://json-schema.org/draft-07/schema',
      'https://json-schema.org/draft-07/schema#',
      'https://json-schema.org/draft/2020-12/schema',
      'https://json-schema.org/draft/2020-12/schema#',
      'https://json-schema.org/draft/2019-09/schema',
    ])
      assert.equal(schemaProblem({ $schema: uri, type: 'object', properties: { a: { type: 'string' } } }), undefined, uri);
  });

  it('an unknown $schema is refused naming it; a broken schema or another document says why', () => {
    for (const uri of ['http://json-schema.org/draft-04/schema#', 'https://example.com/my-meta', 7]) {
      const problem = schemaProblem({ $schema: uri as string, type: 'object' }) ?? '';
      assert.match(problem, /is not a dialect Quorum checks/);
      assert.ok(problem.includes(JSON.stringify(uri)), problem);
    }
    assert.match(schemaProblem({ type: 'no-such-type' }) ?? '', /schema is invalid/);
    assert.match(schemaProblem({ $ref: 'https://example.com/schema.json' }) ?? '', /can't resolve reference/);
    // A draft-07 tuple under a declared 2020-12 is not 2020-12.
    assert.match(
      schemaProblem({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', items: [{ type: 'string' }] }) ?? '',
      /items must be object,boolean/,
    );
  });
});
