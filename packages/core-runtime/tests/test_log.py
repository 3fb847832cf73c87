"""sporeling.core.log (mindspore.log): GLOG_v levels, get_level/get_log_config, the caller's
file and line in each message, a log directory with GLOG_logtostderr=0, bad settings."""

from __future__ import annotations

import logging

import pytest

from sporeling.core import log


@pytest.fixture
def fresh(monkeypatch):
    logger = logging.getLogger(log.LOGGER_NAME)
    saved = (logger.level, list(logger.handlers))
    monkeypatch.setattr(log, "_configured", None)
    logger.handlers = []
    yield logger
    for handler in logger.handlers:
        handler.close()
    logger.setLevel(saved[0])
    logger.handlers = saved[1]


def test_levels_from_glog_v(fresh, monkeypatch, capsys):
    monkeypatch.setenv("GLOG_v", "1")
    log.debug("hidden")
    log.info("shown %d", 7)
    err = capsys.readouterr().err
    assert "hidden" not in err and "[INFO]" in err and "shown 7" in err
    assert "test_log.py" in err  # the caller's file, not log.py
    assert log.get_level() == "1"
    assert log.get_log_config() == {"GLOG_v": "1", "GLOG_logtostderr": "1"}


def test_default_is_warning(fresh, monkeypatch, capsys):
    monkeypatch.delenv("GLOG_v", raising=False)
    log.info("quiet")
    log.warning("loud")
    err = capsys.readouterr().err
    assert "quiet" not in err and "[WARNING]" in err and log.get_level() == "2"


def test_log_dir(fresh, monkeypatch, tmp_path):
    monkeypatch.setenv("GLOG_logtostderr", "0")
    monkeypatch.setenv("GLOG_log_dir", str(tmp_path / "logs"))
    monkeypatch.setenv("GLOG_v", "3")
    log.error("to the file")
    for handler in fresh.handlers:
        handler.flush()
    assert "to the file" in (tmp_path / "logs" / "sporeling.log").read_text()


def test_bad_settings(fresh, monkeypatch):
    monkeypatch.setenv("GLOG_v", "9")
    with pytest.raises(ValueError, match="GLOG_v expected one of 0-4, got '9'"):
        log.get_level()
    monkeypatch.setenv("GLOG_v", "2")
    monkeypatch.setenv("GLOG_logtostderr", "0")
    monkeypatch.delenv("GLOG_log_dir", raising=False)
    with pytest.raises(ValueError, match="GLOG_log_dir"):
        log.get_level()
