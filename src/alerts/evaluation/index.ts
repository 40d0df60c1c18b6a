export { AlertEvaluator } from './evaluator.js';
export { checkQueries, type TileSelect, tileQuery } from './tile-query.js';
