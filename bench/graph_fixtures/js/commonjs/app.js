const { load, save: store } = require('./store.cjs');
const util = require('./util');
const fs = require('fs');

function start() {
  load('a');
  store('b');
  util.join('x', 'y');
  fs.readFileSync('f');
}

start();
