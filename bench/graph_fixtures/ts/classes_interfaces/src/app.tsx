import { createUser } from './models/user';
import { Store } from './models/base';
import React from 'react';

export function App(): JSX.Element {
  const store = new Store();
  const user = createUser(store);
  user.save();
  return React.createElement('div', null, user.name());
}
