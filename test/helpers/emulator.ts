import { after } from 'node:test';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/sandbox/emulator.js';

/** Starts the CRM emulator (src/sandbox/emulator.ts) on 127.0.0.1; it is closed when the test ends. */
export async function emulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator(opts);
  after(() => emu.close());
  return emu;
}
