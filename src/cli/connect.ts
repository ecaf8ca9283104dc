import { Sequelize } from 'sequelize';
import type { LoadedConfig } from './load-config.js';

/**
 * The database the CLI works on, in this order: `--url`, the `OUTBOX_DATABASE_URL`
 * environment variable, a `sequelize` the config module exports, and last an embedded
 * SQLite file `outbox.sqlite` in the working directory (the zero-setup default).
 */
export function connect(
  loaded: LoadedConfig,
  url: string | undefined,
): { sequelize: Sequelize; owned: boolean; where: string } {
  const target = url ?? process.env.OUTBOX_DATABASE_URL;
  if (target) {
    const sequelize = target.startsWith('sqlite:')
      ? new Sequelize({
          dialect: 'sqlite',
          storage: target.slice('sqlite:'.length).replace(/^\/\//, ''),
          logging: false,
        })
      : new Sequelize(target, { logging: false });
    return { sequelize, owned: true, where: redact(target) };
  }
  if (loaded.sequelize)
    return {
      sequelize: loaded.sequelize,
      owned: false,
      where: `the sequelize exported by ${loaded.file}`,
    };
  return {
    sequelize: new Sequelize({ dialect: 'sqlite', storage: 'outbox.sqlite', logging: false }),
    owned: true,
    where: 'sqlite:outbox.sqlite',
  };
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}
