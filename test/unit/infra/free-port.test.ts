import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { ephemeralRange, freePort, portFree } from '../../../infra/free-port';

/** The ports the stacks are started on: free, and out of reach of the machine's outgoing connections. */
describe('free ports', () => {
  it("takes the kernel's ephemeral range where Linux publishes it, IANA's elsewhere", () => {
    const file = '/proc/sys/net/ipv4/ip_local_port_range';
    const expected = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split(/\s+/).map(Number) : [49_152, 65_535];
    assert.deepEqual(ephemeralRange(), expected);
  });

  it('hands out distinct ports at or above 20000, none in the ephemeral range, each bindable', async () => {
    const [low, high] = ephemeralRange();
    const ports: number[] = [];
    for (let i = 0; i < 200; i++) ports.push(await freePort());
    assert.equal(new Set(ports).size, ports.length, 'no port twice');
    for (const port of ports) {
      assert.ok(port >= 20_000 && port <= 65_535, `${port} in 20000-65535`);
      assert.ok(port < low || port > high, `${port} outside the ephemeral range ${low}-${high}`);
    }
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(ports[0], '127.0.0.1', resolve));
    try {
      assert.equal(await portFree(ports[0]), false, 'a bound port is not free');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    assert.equal(await portFree(ports[0]), true, 'free again once closed');
  });
});
