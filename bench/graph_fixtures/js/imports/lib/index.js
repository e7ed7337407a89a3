export { add as plus } from './math.js';
export * from './strings';
