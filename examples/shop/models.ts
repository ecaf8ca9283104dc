import {
  type CreationOptional,
  DataTypes,
  type InferAttributes,
  type InferCreationAttributes,
  type Model,
  type ModelStatic,
  type Sequelize,
} from 'sequelize';

/** One line of an order. */
export interface OrderLine {
  sku: string;
  quantity: number;
}

/** An order, from placed to paid (or cancelled). */
export interface Order extends Model<InferAttributes<Order>, InferCreationAttributes<Order>> {
  id: string;
  customerEmail: string;
  totalCents: number;
  items: OrderLine[];
  status: CreationOptional<'placed' | 'paid' | 'cancelled'>;
}

/** How many of a product are on the shelf. Orders reserve from it; cancellations give back. */
export interface StockItem
  extends Model<InferAttributes<StockItem>, InferCreationAttributes<StockItem>> {
  sku: string;
  quantity: number;
}

/** Money the payment provider captured for an order: at most one per order. */
export interface Payment extends Model<InferAttributes<Payment>, InferCreationAttributes<Payment>> {
  id: CreationOptional<number>;
  orderId: string;
  amountCents: number;
  provider: string;
  reference: string;
}

/** A mail the shop sent, written in the same transaction that acknowledges its delivery. */
export interface SentMail
  extends Model<InferAttributes<SentMail>, InferCreationAttributes<SentMail>> {
  id: CreationOptional<number>;
  orderId: string;
  to: string;
  subject: string;
}

/** The shop's models, bound to one Sequelize instance. */
export interface ShopModels {
  readonly Order: ModelStatic<Order>;
  readonly StockItem: ModelStatic<StockItem>;
  readonly Payment: ModelStatic<Payment>;
  readonly SentMail: ModelStatic<SentMail>;
}

/**
 * Define the shop's tables on a Sequelize instance (`sequelize.sync()` creates them).
 *
 * A function of the instance rather than module-level classes, so two databases (a test
 * and the demo, PostgreSQL and SQLite) never share a model bound to the other one.
 */
export function defineShopModels(sequelize: Sequelize): ShopModels {
  const Order = sequelize.define<Order>(
    'Order',
    {
      id: { type: DataTypes.STRING, primaryKey: true },
      customerEmail: { type: DataTypes.STRING, allowNull: false },
      totalCents: { type: DataTypes.INTEGER, allowNull: false },
      items: { type: DataTypes.JSON, allowNull: false },
      status: { type: DataTypes.STRING, allowNull: false, defaultValue: 'placed' },
    },
    { tableName: 'shop_orders', underscored: true },
  );
  const StockItem = sequelize.define<StockItem>(
    'StockItem',
    {
      sku: { type: DataTypes.STRING, primaryKey: true },
      quantity: { type: DataTypes.INTEGER, allowNull: false },
    },
    { tableName: 'shop_stock', underscored: true, timestamps: false },
  );
  const Payment = sequelize.define<Payment>(
    'Payment',
    {
      id: { type: DataTypes.INTEGER, primaryKey: true, autoIncrement: true },
      // Unique: a payment captured twice for one order is a bug the database refuses.
      orderId: { type: DataTypes.STRING, allowNull: false, unique: true },
      amountCents: { type: DataTypes.INTEGER, allowNull: false },
      provider: { type: DataTypes.STRING, allowNull: false },
      reference: { type: DataTypes.STRING, allowNull: false },
    },
    { tableName: 'shop_payments', underscored: true },
  );
  const SentMail = sequelize.define<SentMail>(
    'SentMail',
    {
      id: { type: DataTypes.INTEGER, primaryKey: true, autoIncrement: true },
      orderId: { type: DataTypes.STRING, allowNull: false },
      to: { type: DataTypes.STRING, allowNull: false },
      subject: { type: DataTypes.STRING, allowNull: false },
    },
    { tableName: 'shop_sent_mail', underscored: true },
  );
  return { Order, StockItem, Payment, SentMail };
}
