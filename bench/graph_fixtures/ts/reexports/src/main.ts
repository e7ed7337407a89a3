import { title, Log, fmt } from './util';
import logger from './util/log';

const log: Log = new Log();

function greet(who: string): string {
  log.info(who);
  logger.info(who);
  return fmt.pad(title(who), 4);
}

greet('ts');
