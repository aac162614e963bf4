// `leadledger completion bash|zsh|fish`: a completion script generated from the commander program itself, so that
// every command, subcommand and option completes as --help lists it, and --sink, --preset and --format their values.
import type { Command, Option } from 'commander';
import { UsageError } from '../errors.js';
import { SOURCES } from '../presets/catalog.js';
import { SINK_NAMES } from '../sinks/registry.js';
import { didYouMean } from '../did-you-mean.js';

/** The shells a script is written for. */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;

interface Node {
  /** 'push', 'ledger show'; '' for the program. */
  path: string;
  subcommands: string[];
  options: string[];
  /** Options that take a value (the word after them is not a command). */
  valued: string[];
  descriptions: Array<{ name: string; description: string }>;
  optionDefs: readonly Option[];
}

/** The values --sink, --preset and friends complete to. */
function valueWords(): Record<string, string[]> {
  return {
    '--sink': [...SINK_NAMES],
    '-s': [...SINK_NAMES],
    '--preset': ['generic', ...SOURCES.map((s) => s.name)],
    '--format': ['jsonl', 'json', 'csv', 'log'],
    '--existing': ['skip', 'update'],
    '--date-order': ['dmy', 'mdy'],
    '--as': ['auto', 'keys', 'emails'],
  };
}

// Every command with its subcommands and options, the program first.
function nodes(program: Command): Node[] {
  const out: Node[] = [];
  const walk = (cmd: Command, path: string) => {
    const visible = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
    const options = cmd.options.filter((o) => !o.hidden);
    const flags = options.flatMap((o) => [o.short, o.long].filter((f): f is string => !!f));
    out.push({
      path,
      subcommands: visible.map((c) => c.name()),
      options: [...flags, '--help'],
      valued: options.filter((o) => o.required).flatMap((o) => [o.short, o.long].filter((f): f is string => !!f)),
      descriptions: visible.map((c) => ({ name: c.name(), description: c.description() })),
      optionDefs: options,
    });
    for (const c of visible) walk(c, path ? `${path} ${c.name()}` : c.name());
  };
  walk(program, '');
  return out;
}

/** The completion script for a shell; a shell that is none of them is a usage error. */
export function completionScript(shell: string, program: Command): string {
  if (shell === 'bash') return bashScript(program);
  if (shell === 'zsh') return zshScript(program);
  if (shell === 'fish') return fishScript(program);
  throw new UsageError(`completion takes ${SHELLS.join(', ')}, not '${shell}'${didYouMean(shell, SHELLS)}`);
}

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function bashScript(program: Command): string {
  const all = nodes(program);
  const valued = [...new Set(all.flatMap((n) => n.valued))];
  const cases = all
    .map((n) => `    ${q(n.path)}) subs=${q(n.subcommands.join(' '))}; opts=${q(n.options.join(' '))} ;;`)
    .join('\n');
  const values = Object.entries(valueWords())
    .map(([flag, words]) => `    ${flag}) COMPREPLY=($(compgen -W ${q(words.join(' '))} -- "$cur")); return 0 ;;`)
    .join('\n');
  return `# bash completion for leadledger (leadledger completion bash); generated from its commands and options.
# Install: leadledger completion bash > ~/.local/share/bash-completion/completions/leadledger
_leadledger() {
  local cur prev path="" word i skip=0 subs opts
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev=""
  if (( COMP_CWORD > 0 )); then prev="\${COMP_WORDS[COMP_CWORD-1]}"; fi
  # The command path so far: the words before the cursor that are commands, not options or their values.
  for (( i = 1; i < COMP_CWORD; i++ )); do
    word="\${COMP_WORDS[i]}"
    if (( skip )); then skip=0; continue; fi
    case " ${valued.join(' ')} " in *" $word "*) skip=1; continue ;; esac
    case "$word" in -*) continue ;; esac
    case "$path" in
${all
  .filter((n) => n.subcommands.length)
  .map(
    (n) =>
      `      ${q(n.path)}) case " ${n.subcommands.join(' ')} " in *" $word "*) path="\${path:+$path }$word" ;; esac ;;`,
  )
  .join('\n')}
    esac
  done
  case "$prev" in
${values}
  esac
  case "$path" in
${cases}
    *) subs=""; opts="" ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ -n "$subs" ]]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
  return 0
}
complete -o filenames -F _leadledger leadledger
`;
}

// zsh runs the bash function through bashcompinit: one logic for both shells.
function zshScript(program: Command): string {
  return `#compdef leadledger
# zsh completion for leadledger (leadledger completion zsh); generated from its commands and options.
# Install: leadledger completion zsh > "\${fpath[1]}/_leadledger", or: source <(leadledger completion zsh)
autoload -U +X bashcompinit && bashcompinit
${bashScript(program)
  .split('\n')
  .filter((l) => !l.startsWith('#'))
  .join('\n')}`;
}

function fishScript(program: Command): string {
  const all = nodes(program);
  const fishq = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  const lines = [
    '# fish completion for leadledger (leadledger completion fish); generated from its commands and options.',
    '# Install: leadledger completion fish > ~/.config/fish/completions/leadledger.fish',
    'complete -c leadledger -f',
  ];
  const values = valueWords();
  for (const n of all) {
    const words = n.path ? n.path.split(' ') : [];
    // Where this node's completions apply: after its command words, before any of its subcommands.
    const cond = [
      words.length ? words.map((w) => `__fish_seen_subcommand_from ${w}`).join('; and ') : '__fish_use_subcommand',
      ...(words.length && n.subcommands.length ? [`not __fish_seen_subcommand_from ${n.subcommands.join(' ')}`] : []),
    ].join('; and ');
    for (const d of n.descriptions)
      lines.push(
        `complete -c leadledger -n ${fishq(cond)} -a ${d.name} -d ${fishq(d.description.split('\n')[0]!.slice(0, 80))}`,
      );
    for (const o of n.optionDefs) {
      const parts = ['complete -c leadledger', `-n ${fishq(cond)}`];
      if (o.long) parts.push(`-l ${o.long.slice(2)}`);
      if (o.short) parts.push(`-s ${o.short.slice(1)}`);
      const v = (o.long && values[o.long]) ?? undefined;
      if (v) parts.push(`-x -a ${fishq(v.join(' '))}`);
      else if (o.required) parts.push('-r -F');
      parts.push(`-d ${fishq(o.description.split('\n')[0]!.slice(0, 80))}`);
      lines.push(parts.join(' '));
    }
  }
  return lines.join('\n') + '\n';
}
