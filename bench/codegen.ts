/**
 * Codegen speed: a config of 200 events and 400 receivers, generated on the fly, run
 * through `outbox codegen` and `outbox codegen --check` in-process (the CLI adds only its
 * start-up). Prints one JSON line per figure.
 *
 *   npx tsx bench/codegen.ts
 *
 * The target (issue 3): codegen under 10 s on the CI machine, and --check not slower.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCodegen } from '../codegen/run-codegen.js';

const EVENTS = 200;
const RECEIVERS_PER_EVENT = 2;
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// Inside the repository (ignored by git), so `zod` and the sources resolve as a user's would.
const DIR = join(REPO, '.outbox-tmp', `bench-codegen-${process.pid}`);

function writeProject(): void {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const events: string[] = [];
  const handlers: string[] = ["import type { OutboxEvent } from '../../src/index.js';", ''];
  const receivers: string[] = [];
  for (let i = 0; i < EVENTS; i++) {
    const name = `domain${i % 10}.Thing${i}Happened`;
    events.push(
      `export const E${i} = event({ version: ${1 + (i % 3)}, schema: z.object({ id: z.string(), n${i}: z.number().int(), tags: z.array(z.string()).optional(), at: z.coerce.date(), kind: z.enum(['a', 'b']).default('a') }) });`,
    );
    for (let r = 0; r < RECEIVERS_PER_EVENT; r++) {
      const fn = `on${i}x${r}`;
      handlers.push(
        `export async function ${fn}(event: OutboxEvent<{ id: string; n${i}: number }>): Promise<void> { void event.payload.id; }`,
      );
      receivers.push(
        r === 0
          ? `    'r${i}.${r}': receiver(E${i}, { handle: ${fn}, maxAttempts: ${1 + (i % 7)} }),`
          : `    'r${i}.${r}': receiver('${name}', { handle: ${fn} as Handler, mode: 'durable' }),`,
      );
    }
  }
  writeFileSync(join(DIR, 'handlers.ts'), `${handlers.join('\n')}\n`);
  writeFileSync(
    join(DIR, 'events.ts'),
    `import { z } from 'zod';\nimport { event } from '../../src/index.js';\n\n${events.join('\n')}\n`,
  );
  writeFileSync(
    join(DIR, 'outbox.config.ts'),
    [
      "import { defineOutbox, type Handler, receiver } from '../../src/index.js';",
      "import * as h from './handlers.js';",
      "import * as e from './events.js';",
      `const { ${Array.from({ length: EVENTS }, (_, i) => `E${i}`).join(', ')} } = e;`,
      `const { ${Array.from({ length: EVENTS }, (_, i) => `on${i}x0, on${i}x1`).join(', ')} } = h;`,
      'export default defineOutbox({',
      '  events: {',
      ...Array.from(
        { length: EVENTS },
        (_, i) => `    'domain${i % 10}.Thing${i}Happened': E${i},`,
      ),
      '  },',
      '  receivers: {',
      ...receivers,
      '  },',
      '});',
      '',
    ].join('\n'),
  );
}

async function time(label: string, check: boolean): Promise<number> {
  const lines: string[] = [];
  const started = performance.now();
  const code = await runCodegen(
    { cwd: DIR, check, importFrom: '../../src/index.js', out: 'outbox.generated.ts' },
    { log: (t) => lines.push(t), error: (t) => lines.push(t) },
  );
  const ms = Math.round(performance.now() - started);
  if (code !== 0) throw new Error(`${label} exited ${code}:\n${lines.join('\n')}`);
  console.log(
    JSON.stringify({
      bench: label,
      events: EVENTS,
      receivers: EVENTS * RECEIVERS_PER_EVENT,
      ms,
      underTenSeconds: ms < 10_000,
    }),
  );
  return ms;
}

writeProject();
if (process.argv.includes('--write-only')) process.exit(0);
try {
  await time('codegen', false);
  await time('codegen --check', true);
} finally {
  rmSync(DIR, { recursive: true, force: true });
}
