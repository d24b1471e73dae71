import assert from 'node:assert/strict';
import { expiryAlertDue } from '../../../domain/account-events';

const DAY = 86_400_000;

describe('account events: which expiry alert is due (issue 41 item 4)', () => {
  it('7 days ahead and nearer is the 7-day alert, a day and nearer the 1-day one; none further out or once ended', () => {
    assert.deepEqual([8 * DAY, 7 * DAY + 1, 7 * DAY, 6.5 * DAY, DAY + 1, DAY, 0.5 * DAY, 1, 0, -DAY].map(expiryAlertDue), [
      null,
      null,
      7,
      7,
      7,
      1,
      1,
      1,
      null,
      null,
    ]);
  });
});
