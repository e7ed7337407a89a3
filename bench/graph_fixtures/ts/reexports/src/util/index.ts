export * from './format';
export { Logger as Log } from './log';
export * as fmt from './format';
