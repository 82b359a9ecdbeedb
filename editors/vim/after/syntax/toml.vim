" Highlights smpsim code paths, the C-like text of a scenario's `code` and
" `[functions]` entries (docs/scenario-format.md, "Code paths"), inside
" TOML multi-line literal strings. Ops are highlighted as calls, so ops
" added to the simulator need no change here.
"
" Install: copy to ~/.vim/after/syntax/toml.vim (Neovim:
" ~/.config/nvim/after/syntax/toml.vim), or add this directory's parent to
" 'runtimepath'.

if exists('b:smpsim_code_syntax')
  finish
endif
let b:smpsim_code_syntax = 1

" A code path: a key's value opened with ''' at the end of its line.
syntax region smpsimCode matchgroup=tomlString
      \ start=+^\s*[A-Za-z0-9_.-]\+\s*=\s*'''\s*$+ end=+'''+
      \ contains=smpsimKeyword,smpsimCall,smpsimLabel,smpsimNumber,smpsimString,smpsimLineComment,smpsimBlockComment,smpsimNamedArg
      \ keepend

syntax keyword smpsimKeyword contained if else for choose forever true false
syntax match smpsimCall contained /\<[A-Za-z_][A-Za-z0-9_]*\ze\s*(/
syntax match smpsimNamedArg contained /\<[A-Za-z_][A-Za-z0-9_]*\ze\s*=[^=]/
syntax match smpsimLabel contained /^\s*\d\+\s*:/
syntax match smpsimNumber contained /\<-\=\d[A-Za-z0-9_.]*\>/
syntax region smpsimString contained start=+"+ skip=+\\.+ end=+"+ oneline
syntax match smpsimLineComment contained +//.*$+
syntax region smpsimBlockComment contained start=+/\*+ end=+\*/+

highlight default link smpsimKeyword Statement
highlight default link smpsimCall Function
highlight default link smpsimNamedArg Identifier
highlight default link smpsimLabel Label
highlight default link smpsimNumber Number
highlight default link smpsimString String
highlight default link smpsimLineComment Comment
highlight default link smpsimBlockComment Comment
