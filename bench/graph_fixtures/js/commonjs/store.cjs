function load(key) {
  return save(key);
}

function save(key) {
  return key;
}

exports.reset = function reset() {
  return load('all');
};

module.exports = { load, save, reset: exports.reset };
