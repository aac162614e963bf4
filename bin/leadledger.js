#!/usr/bin/env node
// Thin entry point: everything lives in dist/cli/main.js so startup loads only what a command needs.
import '../dist/cli/main.js';
