// The CommonJS entry of the consumer scenario: `require('outboxkit')` (require(esm), Node
// >= 20.19), with zod and sequelize required the CommonJS way too, as a CJS app has them.
const { Sequelize } = require('sequelize');
const { z } = require('zod');
const { z: z3 } = require('zod/v3');
const outboxkit = require('outboxkit');
const testing = require('outboxkit/testing');
const scenario = require('./scenario.cjs');

scenario({ Sequelize, z, z3, outboxkit, testing, dir: process.argv[2] }).then(
  (result) => console.log(JSON.stringify(result)),
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);
