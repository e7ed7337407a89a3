import scale, { add as sum } from './lib/math';
import * as lib from './lib';
import { plus, shout } from './lib/index.js';
import _ from 'lodash';

function run() {
  sum(1, 2);
  scale(3);
  lib.shout('x');
  plus(1, 1);
  shout('y');
  _.map([1], scale);
  console.log(JSON.stringify({}));
}

run();
