export interface Named {
  name(): string;
}

export interface Entity extends Named {
  id: number;
}

export abstract class Model implements Entity {
  id = 0;

  constructor(protected readonly store: Store) {
    this.init();
  }

  init(): void {
    this.store.register(this.id);
  }

  abstract name(): string;

  save(): Promise<void> {
    return this.store.write(this.name());
  }
}

export class Store {
  register(id: number): void {
    console.debug(id);
  }

  write(data: string): Promise<void> {
    return Promise.resolve();
  }
}
