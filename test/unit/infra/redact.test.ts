import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { redact, registerSecret } from '../../../infra/redact';

// Pure (no stack): the redactor is process state of its own, nothing else.
describe('infra: redact', () => {
  it('masks a registered secret wherever it appears, and ignores values too short to be one', () => {
    const secret = `s3cr3t-${randomBytes(8).toString('hex')}`;
    assert.equal(redact(`before ${secret} after`), `before ${secret} after`);
    registerSecret(secret);
    registerSecret('short');
    registerSecret(undefined);
    assert.equal(redact(`a=${secret}, b=${secret}; short`), 'a=[redacted], b=[redacted]; short');
  });

  it('masks key-shaped strings by pattern, keeping the Bearer word', () => {
    assert.equal(redact('key qrm_live_abcdefgh12345678 used'), 'key [redacted] used');
    assert.equal(redact('sk-proj-abcdefghijklmnop'), '[redacted]');
    assert.equal(redact('AKIAABCDEFGHIJKLMNOP'), '[redacted]');
    assert.equal(redact('Authorization: Bearer abc.def-ghi_jkl'), 'Authorization: Bearer [redacted]');
    assert.equal(redact('nothing secret here'), 'nothing secret here');
  });
});
