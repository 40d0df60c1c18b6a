export { isPrivateAddress, privateHostProblem } from './private-address.js';
