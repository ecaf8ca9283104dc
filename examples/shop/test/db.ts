/**
 * The shop wired the way most apps wire themselves, for the README's testing section: one
 * Sequelize, made when this module loads, from `DATABASE_URL`, and the shop's models and
 * its outbox defined on it then. A test cannot hand such an app a Sequelize of its own, so
 * the setup file (`setup.ts`) points `DATABASE_URL` at the test file's own database before
 * the test file imports this module.
 */
import { Sequelize } from 'sequelize';
import { createShop } from '../app.js';

if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is not set (the test setup sets it)');
export const sequelize = new Sequelize(process.env.DATABASE_URL, { logging: false });

const shop = createShop(sequelize, { log: () => {} });
export const { outbox, placeOrder, cancelOrder } = shop;
export const { Order, StockItem, Payment, SentMail } = shop.models;
