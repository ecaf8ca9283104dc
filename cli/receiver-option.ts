/**
 * `--receiver <key>` of the operation commands (`dead`, `requeue-dead`, `cancel`, `replay`),
 * checked against the config before any statement: a misspelt key would otherwise match no
 * row and report zero (exit 0), which reads as "nothing to do". It is refused instead, as
 * `replay` refuses it, naming the closest durable receiver and the declared ones.
 */
import { closestName } from '../src/declare/config-path.js';
import type { OutboxConfig } from '../src/declare/define-outbox.js';
import { ValidationError } from '../src/errors/outbox-error.js';

/**
 * Check `key` (undefined passes) names a durable receiver of `config` — only those have
 * rows to list, requeue or cancel.
 * @throws {ValidationError} (the CLI prints it, exit 1) naming the key, a "did you mean"
 * when one is close, and the durable receivers.
 */
export function checkReceiverFlag(
  config: OutboxConfig,
  key: string | undefined,
  option = '--receiver',
): void {
  if (key === undefined) return;
  const receiver = config.receiver(key);
  if (receiver?.mode === 'durable') return;
  const durable = config.receivers.filter((r) => r.mode === 'durable').map((r) => r.key);
  const hint = closestName(key, durable);
  const shown = durable.slice(0, 10).join(', ') + (durable.length > 10 ? ', …' : '');
  throw new ValidationError(
    `${option} ${JSON.stringify(key)} is not a durable receiver of this outbox${receiver ? ` (it is ${receiver.mode}: it has no rows)` : ''}${hint ? ` — did you mean "${hint}"?` : ''}; the durable receivers are: ${shown || 'none'}`,
    { path: 'receiverKey' },
  );
}
