/**
 * `outbox console [--port 4580] [--host 127.0.0.1] [--read-only] [--token [token]]`: the
 * operations console (`outboxkit/console`) served on its own, until SIGTERM/SIGINT.
 *
 * Loopback by default: the pages show payloads, which are the application's users' data.
 * Another host is served only with a token (`--token`, or OUTBOX_CONSOLE_TOKEN), since a
 * console reachable from the network without one would show every payload to whoever
 * finds the port. Without a token the console is read-only: actions need someone to hold
 * responsible, and a token's sign-in names them.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Command } from 'commander';
import { projectPackage } from '../../catalogue/asyncapi-cli.js';
import { createConsoleHandler } from '../../console/handler.js';
import { isLoopback, randomToken } from '../../console/security.js';
import { ConfigurationError } from '../../src/errors/outbox-error.js';
import { createOutbox } from '../../src/outbox.js';
import { EXIT } from '../exit-codes.js';
import { type CliIo, onStopRequest } from '../io.js';
import type { CliOutput } from '../log-format.js';
import { relayWakeup, requireMigrated } from '../operation.js';
import { type ConnectionFlags, connectionOptions, integer } from '../options.js';
import { openSession } from '../session.js';

/** The default `--port`. */
export const DEFAULT_CONSOLE_PORT = 4580;

/** The flags of `outbox console`, as commander hands them over. */
export interface ConsoleFlags extends ConnectionFlags {
  readonly port: number;
  readonly host: string;
  readonly readOnly?: boolean;
  /** `--token <token>`, or `--token` alone (true): a random one, printed. */
  readonly token?: string | true;
  readonly title?: string;
}

/** Declare the command's options on `command`. */
export function consoleCommand(command: Command): Command {
  return connectionOptions(
    command.description(
      'serve the operations console in the browser: health, dead letters, events, quiet receivers, the catalogue; requeue, replay and cancel with a token',
    ),
  )
    .option(
      '--port <port>',
      'the port to listen on (0: any free one)',
      integer(0, 65535),
      DEFAULT_CONSOLE_PORT,
    )
    .option(
      '--host <host>',
      'the address to listen on (another than loopback needs a token)',
      '127.0.0.1',
    )
    .option('--read-only', 'serve the pages and no action, whoever asks')
    .option(
      '--token [token]',
      'the secret every request needs (a header, or the sign-in at /login); alone: a random one, printed (default: OUTBOX_CONSOLE_TOKEN)',
    )
    .option(
      '--title <title>',
      "the heading of every page (default: the project's package.json name)",
    )
    .addHelpText(
      'after',
      `
Safety:
  Binds 127.0.0.1 unless --host says otherwise, and refuses any other host without a token.
  Without a token the console is read-only; with one, a sign-in (your name and the token)
  opens a session cookie (HttpOnly, SameSite=Strict) and actions need its CSRF token and a
  confirmation. Each action is logged with who did it. --read-only serves no action at all.
  Behind a network, put it behind TLS (a reverse proxy): the token travels with each request.

Exit codes:
  0  stopped (SIGTERM/SIGINT)
  1  could not run: no or bad config, no database, tables missing or behind, a host other
     than loopback without a token, the port in use`,
    );
}

/** Run `outbox console` until asked to stop. */
export async function consoleServe(
  flags: ConsoleFlags,
  out: CliOutput,
  io: CliIo,
): Promise<number> {
  const token =
    flags.token === true
      ? randomToken()
      : (flags.token ?? io.env.OUTBOX_CONSOLE_TOKEN ?? undefined) || undefined;
  if (!isLoopback(flags.host) && token === undefined) {
    throw new ConfigurationError(
      `--host ${flags.host} serves the console beyond this machine: give it a token (--token, or OUTBOX_CONSOLE_TOKEN), or keep the default --host 127.0.0.1`,
      { path: 'host' },
    );
  }
  if (token !== undefined && token.length < 16) {
    throw new ConfigurationError(
      'the console token must be at least 16 characters (--token alone makes a random one)',
      {
        path: 'token',
      },
    );
  }
  const session = await openSession(flags, { mustExist: true }, io);
  try {
    await requireMigrated(session);
    const outbox = createOutbox(session.loaded.config, {
      sequelize: session.db.sequelize,
      schema: flags.schema,
      tablePrefix: flags.tablePrefix,
      preparedStatements: flags.preparedStatements,
      logger: out.logger,
      // Requeue and replay wake `outbox relay` processes listening (PostgreSQL).
      wakeup: await relayWakeup(session),
    });
    const project = projectPackage(io.cwd);
    const title = flags.title ?? (project.name ? `${project.name} outbox` : 'outbox console');
    const handler = createConsoleHandler(outbox, {
      token,
      readOnly: flags.readOnly === true,
      title,
      asyncApi: { title: project.name ?? title, version: project.version ?? '0.0.0' },
    });
    const server = createServer((req, res) => void handler(req, res));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(flags.port, flags.host, () => {
          server.off('error', reject);
          resolve();
        });
      }).catch((error: unknown) => {
        throw new ConfigurationError(
          `cannot listen on ${flags.host}:${flags.port} (${(error as Error)?.message ?? String(error)})`,
          { path: 'port', cause: error },
        );
      });
      const { port } = server.address() as AddressInfo;
      const host = flags.host.includes(':') ? `[${flags.host}]` : flags.host;
      const url = `http://${host}:${port}/`;
      const mode = flags.readOnly
        ? 'read-only'
        : token === undefined
          ? 'read-only: no token (--token or OUTBOX_CONSOLE_TOKEN) for actions'
          : `sign in at ${url}login with the token`;
      out.result(`console on ${url} for ${session.where} (${mode})`, {
        url,
        readOnly: mode.startsWith('read-only'),
      });
      if (flags.token === true) out.result(`token: ${token}`, { token });
      await new Promise<void>((resolve) => {
        const off = onStopRequest(
          io,
          () => {
            off();
            resolve();
          },
          { once: true },
        );
      });
      out.info('console stopping');
    } finally {
      handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await outbox.close();
    }
    return EXIT.ok;
  } finally {
    await session.close();
  }
}
