export class Logger {
  info(msg: string): void {
    console.log(msg);
  }
}

export default new Logger();
