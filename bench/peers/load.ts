/**
 * The peers, loaded at run time from bench/peers/node_modules by a dynamic `import()` of
 * a name TypeScript does not resolve, typed by the small interfaces below (the parts of
 * graphile-worker 0.18 and pg-boss 10 the bench calls), so the root's `tsc` and `biome`
 * pass whether or not the peers are installed.
 */

/** graphile-worker's task: the payload and helpers (unused). */
export type GraphileTask = (payload: unknown) => Promise<void>;

/** The `run()` options the bench sets (graphile-worker's RunnerOptions). */
export interface GraphileRunOptions {
  readonly pgPool?: unknown;
  readonly connectionString?: string;
  readonly schema: string;
  readonly concurrency?: number;
  readonly pollInterval?: number;
  readonly noHandleSignals: true;
  readonly crontab: string;
  readonly taskList: Record<string, GraphileTask>;
  readonly logger: unknown;
  readonly preset?: {
    readonly worker: {
      readonly localQueue?: { readonly size: number };
      readonly completeJobBatchDelay?: number;
    };
  };
}

export interface GraphileRunner {
  stop(): Promise<void>;
  readonly promise: Promise<void>;
}

export interface GraphileWorkerUtils {
  migrate(): Promise<void>;
  addJobs(
    specs: readonly { readonly identifier: string; readonly payload: unknown }[],
  ): Promise<unknown>;
  release(): Promise<void>;
}

export interface GraphileModule {
  run(options: GraphileRunOptions): Promise<GraphileRunner>;
  makeWorkerUtils(options: {
    readonly connectionString: string;
    readonly schema: string;
    readonly logger: unknown;
  }): Promise<GraphileWorkerUtils>;
  readonly Logger: new (
    factory: (scope: unknown) => (level: string, message: string, meta?: unknown) => void,
  ) => unknown;
}

/** pg-boss 10's constructor options the bench sets. */
export interface PgBossOptions {
  readonly connectionString: string;
  readonly schema: string;
  readonly max?: number;
  readonly supervise: boolean;
  readonly schedule: boolean;
  readonly migrate: boolean;
}

export interface PgBossJob {
  readonly id: string;
  readonly data: unknown;
}

export interface PgBoss {
  start(): Promise<unknown>;
  stop(options?: { readonly graceful?: boolean; readonly wait?: boolean }): Promise<void>;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  createQueue(name: string): Promise<void>;
  insert(jobs: readonly { readonly name: string; readonly data: object }[]): Promise<void>;
  work(
    name: string,
    options: { readonly batchSize: number; readonly pollingIntervalSeconds: number },
    handler: (jobs: PgBossJob[]) => Promise<void>,
  ): Promise<string>;
}

export type PgBossClass = new (options: PgBossOptions) => PgBoss;

/** A name the compiler does not follow, resolved from this folder at run time. */
async function importPeer(name: string): Promise<unknown> {
  return import(name);
}

export async function loadGraphile(): Promise<GraphileModule> {
  return (await importPeer('graphile-worker')) as GraphileModule;
}

export async function loadPgBoss(): Promise<PgBossClass> {
  const mod = (await importPeer('pg-boss')) as { default: PgBossClass };
  return mod.default;
}

/** A graphile-worker logger that prints warnings and errors only. */
export function quietGraphileLogger(graphile: GraphileModule): unknown {
  return new graphile.Logger(() => (level, message) => {
    if (level === 'error' || level === 'warning') process.stderr.write(`graphile: ${message}\n`);
  });
}
