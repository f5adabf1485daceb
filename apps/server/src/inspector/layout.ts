import { JOURNAL_LINE_TYPES } from '@locus/journal'
import { type SafeHtml, html, raw } from './html.js'

const CSS = `
:root{color-scheme:light;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa;--ok:#1a7f37;--bad:#b42318;--warn:#8a5a00;--live:#0550ae;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;line-height:1.45}
*{box-sizing:border-box}body{margin:0;color:var(--fg);background:var(--bg)}
header.top{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;padding:.6rem 1rem;border-bottom:1px solid var(--line);background:var(--soft)}
header.top a{color:var(--fg);font-weight:600;text-decoration:none}
main{max-width:1200px;margin:0 auto;padding:1rem}
h1{font-size:1.35rem;word-break:break-all}h2{font-size:1.15rem;margin-top:1.6rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}h3{font-size:1rem}
a{color:var(--live)}a:focus-visible,button:focus-visible,summary:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible{outline:3px solid var(--live);outline-offset:2px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85em}pre{background:var(--soft);padding:.5rem;overflow:auto;max-height:18rem}
code{overflow-wrap:anywhere}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.badge{display:inline-block;border:1px solid currentColor;border-radius:.3rem;padding:0 .35rem;font-size:.85em;font-weight:600;white-space:nowrap}
.tone-ok{color:var(--ok)}.tone-bad{color:var(--bad)}.tone-warn{color:var(--warn);border-style:dashed}.tone-muted{color:var(--muted);border-style:dotted}.tone-live{color:var(--live)}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(14rem,1fr));gap:.4rem 1rem;margin:0}.facts div{border-left:3px solid var(--line);padding-left:.5rem}.facts dt{font-size:.8em;color:var(--muted)}.facts dd{margin:0}
.workspace{margin-top:.8rem;padding:.5rem;border:1px dashed var(--line)}.note{margin:.2rem 0 0;color:var(--muted);font-size:.9em}
.error{border-left:4px solid var(--bad);padding-left:.5rem}
.answer-text{margin:0;padding:.6rem .8rem;border-left:4px solid var(--line);background:var(--soft);white-space:pre-wrap}
.caveats{margin-top:.6rem;padding:.5rem .8rem;border:2px solid var(--warn)}.caveats h3{margin:0}
table{border-collapse:collapse;width:100%;margin:.4rem 0}th,td{border-bottom:1px solid var(--line);padding:.25rem .4rem;text-align:left;vertical-align:top}caption{text-align:left;font-weight:600}
.scroll{overflow-x:auto}
.sources{list-style:none;padding:0}.sources li{margin:.25rem 0}
.timeline,.slots,.calls,.attempts{list-style:none;padding-left:0;margin:.3rem 0}
.slots,.calls{padding-left:1rem;border-left:2px solid var(--line)}
.group,.call,.slot{margin:.35rem 0}
.group-head,.slot-head{font-weight:500}
.slot-completed>.slot-head{border-left:4px solid var(--ok);padding-left:.4rem}
.slot-failed>.slot-head{border-left:4px double var(--bad);padding-left:.4rem}
.slot-not-dispatched>.slot-head{border-left:4px dotted var(--muted);padding-left:.4rem;color:var(--muted);font-style:italic}
.attempt{margin:.3rem 0 .3rem 1rem;padding:.3rem .5rem;border:1px solid var(--line)}
.attempt.discarded{border-style:dashed;background:var(--soft)}
.retry,.refused,.failure,.threw{font-size:.9em}.threw{color:var(--bad)}
.prompt{color:var(--muted);margin:.2rem 0}
.elsewhere{color:var(--muted);font-style:italic}
.deferral{border:1px solid var(--live);padding:.5rem;margin:.5rem 0}
form{display:flex;flex-wrap:wrap;gap:.4rem;align-items:flex-end;margin:.4rem 0}form label{display:block;width:100%}
textarea{width:100%;min-height:4rem}input[type=text],input[type=password],select,textarea{font:inherit;padding:.3rem;border:1px solid var(--muted);max-width:100%}
button{font:inherit;padding:.3rem .8rem;border:1px solid var(--fg);background:var(--soft);cursor:pointer}
.toc{display:flex;flex-wrap:wrap;gap:.8rem}.pager{margin:.4rem 0}
.runs td:first-child{word-break:break-all}
#live-status{font-size:.85em;color:var(--muted)}
.token-call{margin:.4rem 0}.token-head{margin:0;font-size:.85em;color:var(--muted)}.token-text{white-space:pre-wrap;margin:.2rem 0}.token-call.discarded .token-text{text-decoration:line-through;color:var(--muted)}
.chart-pair{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:1rem;align-items:start}.chart{margin:0}.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.8rem;padding:0;font-size:.85em}@media (max-width:800px){.chart-pair{grid-template-columns:1fr}}
@media (max-width:600px){main{padding:.5rem}.facts{grid-template-columns:1fr}.slots,.calls{padding-left:.4rem}.attempt{margin-left:.2rem}
table.runs thead{display:none}table.runs tr{display:block;border-bottom:2px solid var(--line);padding:.3rem 0}table.runs td{display:block;border:0;padding:.05rem 0}table.runs td::before{content:attr(data-label) ": ";font-weight:600;color:var(--muted)}}
`

/** The one script of the inspector: follows the run's event stream and refreshes the live sections in place. */
const SCRIPT = `(function(){
var root=document.querySelector('[data-events]');if(!root||typeof EventSource==='undefined')return;
var status=document.getElementById('live-status');var timer=null;var busy=false;var again=false;
function focused(el){return el.contains(document.activeElement)&&document.activeElement!==document.body}
function refresh(){timer=null;if(busy){again=true;return}busy=true;
fetch(location.href,{headers:{accept:'text/html'},credentials:'same-origin'}).then(function(r){return r.ok?r.text():null}).then(function(text){
if(text===null)return;var doc=new DOMParser().parseFromString(text,'text/html');var prev=null;
doc.querySelectorAll('[data-live]').forEach(function(fresh){var old=document.getElementById(fresh.id);var node=document.importNode(fresh,true);
if(old){if(!focused(old))old.replaceWith(node);else node=old}else if(prev&&prev.parentNode){prev.after(node)}else{var s=document.getElementById('summary');if(s)s.after(node)}
prev=node});document.body.setAttribute('data-refreshed',String(Date.now()));
}).catch(function(){}).then(function(){busy=false;if(again){again=false;refresh()}})}
function onLine(event){document.body.setAttribute('data-last-event',event.lastEventId);if(status)status.textContent='Live: line '+event.lastEventId+' ('+event.type+')';
if(event.type==='run_end'){source.close();if(status)status.textContent='The run ended at line '+event.lastEventId+'.'}
if(timer===null)timer=setTimeout(refresh,15)}
var source=new EventSource(root.getAttribute('data-events'));
${JSON.stringify(JOURNAL_LINE_TYPES)}.forEach(function(type){source.addEventListener(type,onLine)});
source.onerror=function(){if(source.readyState===2&&status)status.textContent='Live updates stopped; reload the page to see the latest.'};
var tokensUrl=root.getAttribute('data-tokens');var box=document.getElementById('token-calls');
if(tokensUrl&&box){var blocks={};var tokens=new EventSource(tokensUrl);
tokens.onmessage=function(event){var r;try{r=JSON.parse(event.data)}catch(e){return}
var key=r.executionId+'/'+r.callId+'/'+r.attempt+'/'+r.llmAttempt;var block=blocks[key];
if(!block){var shown=document.getElementById('tokens');if(shown)shown.hidden=false;block=document.createElement('div');block.className='token-call';block.setAttribute('data-token-call',r.callId);block.setAttribute('data-testid','token-call');
var head=document.createElement('p');head.className='token-head';head.textContent=r.callId+' \u00b7 attempt '+r.attempt+' \u00b7 request '+r.llmAttempt;
var text=document.createElement('pre');text.className='token-text';block.appendChild(head);block.appendChild(text);box.appendChild(block);blocks[key]=block}
if(r.kind==='delta'&&typeof r.text==='string')block.lastChild.textContent+=r.text;
else if(r.kind==='discarded'){block.classList.add('discarded');block.firstChild.textContent+=' \u00b7 thrown away ('+(r.cause||'unknown')+')'}
else if(r.kind==='end')block.classList.add('ended');
document.body.setAttribute('data-last-token',event.lastEventId)};
tokens.addEventListener('done',function(){tokens.close()})}
})();
`

export const INSPECTOR_SCRIPT = SCRIPT

export interface PageOptions {
  readonly title: string
  /** The events URL for the live script, when the run may still grow. */
  readonly eventsUrl?: string | undefined
  /** The run's token stream (`?format=raw`) for the live script to show the model's text as it streams. */
  readonly tokensUrl?: string | undefined
  /** Shown in the header: who is signed in, with a sign-out button. */
  readonly signedIn?: { readonly principal: string; readonly csrf: string } | undefined
}

/** A whole page: header, main, the stylesheet inline and, for a live run, the script. */
export function page(options: PageOptions, body: SafeHtml): string {
  const live = options.eventsUrl !== undefined
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${options.title} · Locus inspector</title><style>${raw(CSS)}</style></head>
<body><a class="visually-hidden" href="#main">Skip to content</a>
<header class="top"><a href="/">Locus run inspector</a><a href="/report">Outcome report</a><a href="/schedules">Schedules</a>${live ? html`<p id="live-status" role="status" aria-live="polite">Live: following the run</p>` : ''}${options.signedIn === undefined ? '' : html`<form method="post" action="/logout"><input type="hidden" name="_csrf" value="${options.signedIn.csrf}"><span>${options.signedIn.principal}</span> <button type="submit">Sign out</button></form>`}</header>
<main id="main"${live ? html` data-events="${options.eventsUrl}"` : ''}${live && options.tokensUrl !== undefined ? html` data-tokens="${options.tokensUrl}"` : ''}>${body}</main>
${live ? html`<script src="/inspector.js" defer></script>` : ''}
</body></html>`.value
}
