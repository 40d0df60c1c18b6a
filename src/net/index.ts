export { isPrivateAddress, privateHostProblem, publicOnlyLookup } from './private-address.js';
