export { QueryService } from './query-service.js';
