export { QUERY_TIMEOUT_MS, QueryService } from './query-service.js';
