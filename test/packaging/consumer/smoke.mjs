// The ESM entry of the consumer scenario: `import` by package name, as an app does.
import { createRequire } from 'node:module';
import * as outboxkit from 'outboxkit';
import * as testing from 'outboxkit/testing';
import { Sequelize } from 'sequelize';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';

const scenario = createRequire(import.meta.url)('./scenario.cjs');
const result = await scenario({ Sequelize, z, z3, outboxkit, testing, dir: process.argv[2] });
console.log(JSON.stringify(result));
