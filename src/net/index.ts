export { isPrivateAddress, privateHostProblem, publicOnlyLookup } from './private-address.js';
export { postPublic } from './public-post.js';
