// `node --require ./test/fast/register.js`: `require('vscode')` resolves to the stand-in.
'use strict';
const Module = require('module');
const path = require('path');

const STUB = path.join(__dirname, 'vscode-stub.js');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request === 'vscode' ? STUB : resolve.call(this, request, ...rest);
};
