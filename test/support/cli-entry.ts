import { main } from '../../src/cli/main.js';

await main(process.argv.slice(2));
