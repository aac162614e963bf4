#!/usr/bin/env node
// Empties dist/ before a build, so that a module removed or moved in src/ leaves no stale copy to be packed and run.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

rmSync(path.join(path.dirname(path.dirname(fileURLToPath(import.meta.url))), 'dist'), { recursive: true, force: true });
