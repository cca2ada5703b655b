# dfworker's embedded Python (executed once when libdfw_python.so starts the interpreter).
#
# What Beam's Python SDK does for a Beam YAML pipeline, restated for dfworker's rows: how a
# `callable:`, a `path:` + `name:` file or an `expression:` becomes the function each row is passed
# to (apache_beam.utils.python_callable.PythonCallableWithSource and yaml_mapping.py's
# _expand_python_mapping_func), the row type callables see, and Jinja2 rendering of pipeline files
# (yaml_transform.expand_jinja) and of chat templates (transformers' apply_chat_template
# environment). The C++ side calls only the functions without a leading underscore.
import builtins
import collections
import importlib
import json
import os
import stat
import traceback
import types

load_time_limit_s = 0  # set by the C++ side after this file runs

# ---- rows ---------------------------------------------------------------------------------------

_row_types = {}


def _row_getitem(self, key):
    # row['field'] as well as row[i]: nested values that Beam hands over as dicts (a model
    # handler's PredictionResult.inference) are rows in dfworker.
    if isinstance(key, str):
        i = type(self)._dfw_index.get(key)
        if i is None:
            raise KeyError(key)
        key = i
    return tuple.__getitem__(self, key)


def row_type(names):
    """The named-tuple class of rows with these field names, made once per name tuple."""
    t = _row_types.get(names)
    if t is None:
        base = collections.namedtuple('BeamSchema', names, rename=True)
        t = type('BeamSchema', (base,), {'__slots__': (), '__getitem__': _row_getitem,
                                         '_dfw_index': {n: i for i, n in enumerate(names)}})
        _row_types[names] = t
    return t


class Row(object):
    """apache_beam.Row: a row built by keyword, Row(a=1, b='x'); fields keep their order."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def as_dict(self):
        return dict(self.__dict__)

    def _asdict(self):
        return dict(self.__dict__)

    def __iter__(self):
        return iter(self.__dict__.values())

    def __len__(self):
        return len(self.__dict__)

    def __getitem__(self, index):
        return list(self.__dict__.values())[index]

    def __eq__(self, other):
        return type(self) == type(other) and self.__dict__ == other.__dict__

    def __hash__(self):
        return hash(tuple(self.__dict__.items()))

    def __repr__(self):
        return 'Row(%s)' % ', '.join('%s=%r' % kv for kv in self.__dict__.items())


class Timestamp(object):
    """Beam's apache_beam.utils.timestamp.Timestamp as rows carry it (an element's timestamp, a
    window's bounds): whole microseconds since the epoch, printed and compared as Beam does."""

    __slots__ = ('micros',)

    def __init__(self, seconds=0, micros=0):
        if not isinstance(seconds, (int, float)) or not isinstance(micros, (int, float)):
            raise TypeError('Cannot interpret %r as a Timestamp.' % ((seconds, micros),))
        self.micros = int(seconds * 1000000) + int(micros)

    @staticmethod
    def of(seconds):
        return seconds if isinstance(seconds, Timestamp) else Timestamp(seconds)

    def seconds(self):
        return self.micros // 1000000

    def __repr__(self):
        micros = abs(self.micros)
        sign = '-' if self.micros < 0 else ''
        whole, frac = divmod(micros, 1000000)
        return 'Timestamp(%s%d.%06d)' % (sign, whole, frac) if frac else 'Timestamp(%s%d)' % (sign, whole)

    def __float__(self):
        return self.micros / 1000000

    def __int__(self):
        return self.micros // 1000000

    def _other(self, other):
        return other.micros if isinstance(other, Timestamp) else Timestamp.of(other).micros

    def __eq__(self, other):
        if not isinstance(other, (Timestamp, int, float)) or isinstance(other, bool):
            return NotImplemented
        return self.micros == self._other(other)

    def __lt__(self, other):
        return self.micros < self._other(other)

    def __le__(self, other):
        return self.micros <= self._other(other)

    def __gt__(self, other):
        return self.micros > self._other(other)

    def __ge__(self, other):
        return self.micros >= self._other(other)

    def __hash__(self):
        return hash(self.micros)

    def __add__(self, seconds):
        return Timestamp(micros=self.micros + int(seconds * 1000000))

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, Timestamp):
            return (self.micros - other.micros) / 1000000
        return Timestamp(micros=self.micros - int(other * 1000000))

    def to_utc_datetime(self):
        import datetime
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=self.micros)

    def to_rfc3339(self):
        return self.to_utc_datetime().isoformat() + 'Z'


def timestamp_from_micros(micros):
    t = Timestamp.__new__(Timestamp)
    t.micros = micros
    return t


_beam = types.ModuleType('apache_beam')
_beam.Row = Row

# ---- Beam's rules for finding the callable ---------------------------------------------------


def _load_from_expression(source):
    return eval(source, {'beam': _beam})


def _load_from_qualified_name(name):
    obj = None
    path = ''
    for segment in name.split('.'):
        path = path + '.' + segment if path else segment
        if obj is not None and hasattr(obj, segment):
            obj = getattr(obj, segment)
        else:
            obj = importlib.import_module(path)
    return obj


def _load_from_script(source, method_name, filename):
    # Comment and blank lines go, the common indentation goes; without a name the function is the
    # last top-level def or class, or else the last top-level line, taken as an expression.
    lines = [line for line in source.split('\n') if line.strip() and line.strip()[0] != '#']
    if not lines:
        raise ValueError('Unable to identify callable from %r' % source)
    indent = min(len(line) - len(line.lstrip()) for line in lines)
    lines = [line[indent:] for line in lines]
    if method_name is None:
        for ix in range(len(lines) - 1, -1, -1):
            line = lines[ix]
            if line[0] != ' ':
                if line.startswith('def '):
                    method_name = line[4:line.index('(')].strip()
                elif line.startswith('class '):
                    end = line.index('(') if '(' in line else line.index(':')
                    method_name = line[5:end].strip()
                else:
                    method_name = '__python_callable__'
                    lines[ix] = method_name + ' = ' + line
                break
        else:
            raise ValueError('Unable to identify callable from %r' % source)
    namespace = {'beam': _beam, '__name__': '__dfw_callable__'}
    exec(compile('\n'.join(lines), filename, 'exec'), namespace)
    if method_name not in namespace:
        raise NameError("name %r is not defined in %s" % (method_name, filename))
    return namespace[method_name]


def callable_from_source(source, filename):
    """A `callable:` text: a builtin, a dotted name to import, or a script."""
    if source in builtins.__dict__:
        return _load_from_expression(source)
    if all(s.isidentifier() for s in source.split('.')):
        if source.split('.')[0] in builtins.__dict__:
            return _load_from_expression(source)
        return _load_from_qualified_name(source)
    return _load_from_script(source, None, filename)


def callable_from_module(source, name):
    """`path:` + `name:`: the function `name` of the file's source."""
    return _load_from_script(source, name, '<udf>')


class _Expression(object):
    """`expression:` (language: python): Beam binds each input field the expression's text
    mentions to a local of that name, then returns the expression's value. The fields are the
    row's, so the function is built once per field-name tuple."""

    def __init__(self, expression):
        compile('(' + expression + ')', '<expression>', 'eval')  # a syntax error shows now
        self.expression = expression
        self.by_fields = {}

    def __call__(self, row):
        fields = type(row)._fields
        fn = self.by_fields.get(fields)
        if fn is None:
            body = ['def fn(__row__):', '  try:']
            body += ['    %s = __row__.%s' % (f, f) for f in fields if f in self.expression]
            body += ['    return (%s)' % self.expression, '  except NameError as e:',
                     '    raise ValueError(f"{e}. Valid values include %r")' % (list(fields),)]
            namespace = {}
            exec(compile('\n'.join(body), '<expression>', 'exec'), namespace)
            fn = self.by_fields[fields] = namespace['fn']
        return fn(row)


def expression_function(expression):
    return _Expression(expression)


class TemplateFailure(Exception):
    """A template that failed to render; its text is 'FILE:LINE: message'."""


def describe(exc):
    """'Type: message', with the line for syntax errors and for errors raised in user code."""
    if isinstance(exc, TemplateFailure):
        return str(exc)
    if isinstance(exc, TimeoutError) and not exc.args:
        return ('TimeoutError: stopped after %d s: module-level code and templates must finish within '
                'the load time limit' % load_time_limit_s)
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, SyntaxError):
        return text if exc.lineno is None else '%s (line %d)' % (text, exc.lineno)
    line = None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name in ('<callable>', '<udf>'):
            line = (name, tb.tb_lineno)
        tb = tb.tb_next
    if line is not None:
        text += ' (%s line %d)' % line
    return text


# ---- Jinja2 ------------------------------------------------------------------------------------


def _template_error(exc, names):
    """'FILE:LINE: message' for a Jinja2 error: the line of the innermost template frame."""
    import jinja2
    message = exc.message if isinstance(exc, jinja2.TemplateError) and exc.message else str(exc)
    if not isinstance(exc, jinja2.TemplateError):
        message = '%s: %s' % (type(exc).__name__, message)
    if isinstance(exc, jinja2.TemplateSyntaxError) and exc.lineno:
        return '%s:%d: %s' % (exc.filename or exc.name or names[0], exc.lineno, message)
    where = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in names:
            where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    if where is None:
        return '%s: %s' % (names[0], message)
    return '%s:%d: %s' % (where[0], where[1], message)


def _pipeline_variables(request_json):
    # {"json": the --jinja_variables text, "overrides": {name: str}}: Beam's main.py reads the
    # flag with json.loads, then the --jinja_variable_flags values win.
    request = json.loads(request_json)
    variables = {}
    if request['json']:
        try:
            variables = json.loads(request['json'])
        except ValueError as e:
            raise TemplateFailure('--jinja_variables: not valid JSON: %s' % e) from None
        except RecursionError:
            raise TemplateFailure('--jinja_variables: nested too deeply to read (RecursionError)') from None
        if not isinstance(variables, dict):
            raise TemplateFailure('--jinja_variables: expected a JSON object such as \'{"K": 3}\', got %s'
                                  % type(variables).__name__)
    variables.update(request['overrides'])
    return variables


_MAX_TEMPLATE_BYTES = 4 << 20  # as for the pipeline file itself


def _file_kind(mode):
    if stat.S_ISDIR(mode):
        return 'a directory'
    if stat.S_ISFIFO(mode):
        return 'a FIFO'
    if stat.S_ISCHR(mode):
        return 'a character device'
    if stat.S_ISBLK(mode):
        return 'a block device'
    if stat.S_ISSOCK(mode):
        return 'a socket'
    return 'not a regular file'


def render_pipeline(path, source, request_json):
    """Beam's expand_jinja: StrictUndefined, templates loaded by path (as given, then beside the
    pipeline file), `datetime` and the variables in scope."""
    import datetime
    import jinja2
    variables = _pipeline_variables(request_json)
    base = os.path.dirname(path) or '.'
    names = [path]

    class _Loader(jinja2.BaseLoader):
        def get_source(self, environment, name):
            if name == path:
                return source, path, lambda: True
            tried = []
            for candidate in (name, os.path.join(base, name)):
                try:
                    st = os.stat(candidate)
                except OSError:
                    tried.append(candidate)
                    continue
                # Never open what is not a regular file (a FIFO would block, a device never end).
                if not stat.S_ISREG(st.st_mode):
                    raise jinja2.TemplateError("template '%s' is not a regular file: it is %s"
                                               % (candidate, _file_kind(st.st_mode)))
                if st.st_size > _MAX_TEMPLATE_BYTES:
                    raise jinja2.TemplateError("template '%s' is %d bytes, over the limit of 4 MiB for a template"
                                               % (candidate, st.st_size))
                with open(candidate, encoding='utf-8') as f:
                    names.append(candidate)
                    return f.read(), candidate, lambda: True
            raise jinja2.TemplateNotFound(name, message="template '%s' not found (looked for %s)"
                                          % (name, ', '.join(dict.fromkeys(tried))))

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, loader=_Loader())
    try:
        return env.get_template(path).render(datetime=datetime, **variables)
    except (jinja2.TemplateError, RecursionError, MemoryError, TypeError, ValueError, ArithmeticError,
            LookupError, AttributeError) as e:
        raise TemplateFailure(_template_error(e, names)) from None


_chat_env = None
_chat_templates = collections.OrderedDict()


def _make_chat_env():
    # transformers' _compile_jinja_template: the same environment, filters and globals.
    import datetime
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _Generation(jinja2.ext.Extension):
        # {% generation %}...{% endgeneration %} (transformers' AssistantTracker) renders its body.
        tags = {'generation'}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(['name:endgeneration'], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method('_body'), [], [], body).set_lineno(lineno)

        def _body(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_Generation, jinja2.ext.loopcontrols])
    env.filters['tojson'] = tojson
    env.globals['raise_exception'] = raise_exception
    env.globals['strftime_now'] = strftime_now
    return env


def render_chat(name, source, variables_json):
    """A chat template as transformers' apply_chat_template renders it."""
    import jinja2
    global _chat_env
    if _chat_env is None:
        _chat_env = _make_chat_env()
    variables = json.loads(variables_json)
    try:
        template = _chat_templates.get(source)
        if template is None:
            template = _chat_env.from_string(source)
            _chat_templates[source] = template
            while len(_chat_templates) > 16:
                _chat_templates.popitem(last=False)
        return template.render(**variables)
    except (jinja2.TemplateError, RecursionError, MemoryError, TypeError, ValueError, ArithmeticError,
            LookupError, AttributeError) as e:
        raise TemplateFailure(_template_error(e, ['<template>']).replace('<template>', name, 1)) from None
