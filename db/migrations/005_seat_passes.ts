import type { Knex } from 'knex';

/** The stored Outcome names a seat's answer in one round a `SeatPass`: its list moves from `seatRows` to `seatPasses`. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `update receipts set outcome = (outcome - 'seatRows') || jsonb_build_object('seatPasses', outcome -> 'seatRows') where outcome \\? 'seatRows'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `update receipts set outcome = (outcome - 'seatPasses') || jsonb_build_object('seatRows', outcome -> 'seatPasses') where outcome \\? 'seatPasses'`,
  );
}
