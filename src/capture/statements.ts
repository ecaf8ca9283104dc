/**
 * What the hooks of one statement share across the modules that capture it.
 */

/**
 * The options objects of bulk statements (`bulkCreate`, `Model.update`, `Model.destroy`,
 * …): their per-row hooks (`individualHooks`) are not captured twice.
 */
export const bulk = new WeakSet<object>();
