/**
 * EXPERIMENT (issue 7): the client cost of taking a connection from Sequelize's pool and
 * giving it back, through Sequelize's `getConnection` (two hook runs and a version check
 * around the pool's `acquire`) and through src/'s `acquireConnection` (the pool directly
 * when no pool hook is registered; pg-client.ts). Warm, in a tight loop: µs per acquire.
 *
 *   npx tsx bench/experiments/pool-acquire.ts [--n 50000] [--rounds 3]
 */
import { parseArgs } from 'node:util';
import { acquireConnection, connectionManager } from '../../src/storage/postgres/pg-client.js';
import { openSequelize } from '../common.js';

const { values: args } = parseArgs({
  options: { n: { type: 'string', default: '50000' }, rounds: { type: 'string', default: '3' } },
});
const N = Number(args.n);
const sequelize = openSequelize(2);
await sequelize.authenticate();
const manager = connectionManager(sequelize);
const ways = [
  ['getConnection', () => manager.getConnection()],
  ['acquireConnection', () => acquireConnection(sequelize)],
] as const;
for (let round = 1; round <= Number(args.rounds); round++) {
  for (const [name, take] of ways) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) manager.releaseConnection(await take());
    const cpu = process.cpuUsage(cpu0);
    const wall = ((performance.now() - t0) * 1000) / N;
    console.log(
      `round ${round} ${name.padEnd(17)} wall µs ${wall.toFixed(2)}  cpu µs ${((cpu.user + cpu.system) / N).toFixed(2)}`,
    );
  }
}
await sequelize.close();
