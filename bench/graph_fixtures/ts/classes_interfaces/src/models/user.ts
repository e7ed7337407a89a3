import { Model, Store } from './base';
import type { Named } from './base';

export class User extends Model implements Named {
  name(): string {
    return this.format('user');
  }

  private format(prefix: string): string {
    return `${prefix}:${this.id}`;
  }

  override save(): Promise<void> {
    this.name();
    return super.save();
  }
}

export function createUser(store: Store): User {
  return new User(store);
}
