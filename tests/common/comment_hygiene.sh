#!/bin/bash
# Comments state what the code is and why. History belongs in commit messages and docs/:
# a comment in a header (*.h, *.hpp, *.cuh) under harness/ netem/ workloads/ common/, or a
# `#` comment in a script, Python module or shipped YAML (scripts/ python/ experiments/
# topologies/ .ci/) may not cite
#   - a date (2026-11-27),
#   - a commit hash ("commit 3d1e510", "(ccb215f)"),
#   - a numbered work item ("issue 13", "task 7", "ticket 4", "acceptance 2", "#12"),
#   - a path outside the repository (/root/..., /work/..., ../shared/...) or a Markdown
#     file the repository does not hold (DESIGN.md).
# Prints FILE:LINE: TEXT for each and fails when there is any.
# Usage: comment_hygiene.sh SOURCE_ROOT
set -u
cd "${1:-.}" || exit 2

allow=()

# Markdown files the repository holds, by name.
known_md=$(find . -name '*.md' -not -path './build*' -printf '%f\n' | sort -u | tr '\n' ' ')

{
  find harness netem workloads common \( -name '*.h' -o -name '*.hpp' -o -name '*.cuh' \) -print
  find scripts python experiments topologies .ci \( -name '*.sh' -o -name '*.py' -o -name '*.yaml' \
    -o -name run \) -not -path '*/__pycache__/*' -print 2>/dev/null
} |
  sort | KNOWN_MD="$known_md" ALLOW="${allow[*]}" perl -e '
    my %allow = map { $_ => 1 } split " ", $ENV{ALLOW};
    my %md = map { $_ => 1 } split " ", $ENV{KNOWN_MD};
    my $bad = 0;
    while (my $f = <STDIN>) {
      chomp $f;
      next if $allow{$f};
      open(my $in, "<", $f) or die "$f: $!";
      my $block = 0;
      my $hash = $f !~ /\.(h|hpp|cuh)$/;  # `#` comments (shell, Python, YAML)
      while (my $line = <$in>) {
        chomp $line;
        my $c = "";
        if ($hash) {
          next if $. == 1 && $line =~ /^#!/;
          $c = $1 if $line =~ /(?:^|\s)#(?![!{#])(.*)$/;
        } elsif ($block) {  # inside /* ... */
          $c = $line;
          $block = 0 if $line =~ m{\*/};
        } elsif ($line =~ m{(//|/\*)(.*)$}) {
          $c = $2;
          $block = 1 if $1 eq "/*" && $c !~ m{\*/};
        }
        next if $c eq "";
        my $why;
        if ($c =~ /\b20\d\d-[01]\d-[0-3]\d\b/) {
          $why = "a date";
        } elsif ($c =~ /\bcommit\s+[0-9a-f]{7,40}\b/i
                 || $c =~ /\((?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\)/i) {
          $why = "a commit hash";
        } elsif ($c =~ /\b(issue|task|ticket|acceptance)\s+#?\d+/i
                 || $c =~ /\b(issues|tasks|tickets)\s+#?\d+\s*(,|and\b|&)/i
                 || $c =~ /(^|[\s(,;])#\d+\b/) {
          $why = "a numbered work item";
        } elsif ($c =~ m{(^|[\s(`"\x27])/(root|work)/|\.\./shared\b}) {
          $why = "a path outside the repository";
        } else {
          for my $m ($c =~ /([\w.-]+\.md)\b/g) {
            $why = "$m, which the repository does not hold" unless $md{$m};
          }
        }
        if ($why) {
          print "$f:$.: cites $why:$c\n";
          $bad++;
        }
      }
      close $in;
    }
    print "$bad comment(s) cite history or files outside the repository\n";
    exit($bad ? 1 : 0);
  '
