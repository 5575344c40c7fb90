"""The C/C++ and Dockerfile derivations (components/k8s/upstream/derive_cpp.py) on small DCGM-shaped inputs whose
facts are computed by hand."""

from __future__ import annotations

import pytest

from components.k8s.upstream import derive_cpp

CPP = r'''
#define OVERALL_HEALTH_TAG            "Overall Health"
#define DCGM_HE_PORT_NUMBER 5555
#define NOT_A_STRING(x) (x)
typedef enum
{
    DCGM_HEALTH_RESULT_PASS = 0,  //!< normal
    DCGM_HEALTH_RESULT_WARN = 10, //!< warning
    DCGM_ST_GENERIC_ERROR        = -3,
} dcgmHealthWatchResults_t;

std::string Health::HelperHealthToString(dcgmHealthWatchResults_t health)
{
    if (health == DCGM_HEALTH_RESULT_PASS)
        return "Healthy";
    else if (health == DCGM_HEALTH_RESULT_WARN)
        return "Warning";
    else
        return "Internal error";
}

dcgmReturn_t CommandLineParser::ProcessHealthCommandLine(int argc, char const *const *argv)
{
    TCLAP::ValueArg<std::string> groupIdArg(
        "g", "group", "The GPU group", false, "g", "groupId", cmd);
    TCLAP::SwitchArg checkWatches(
        "c",
        "check",
        "Check {watches}", false);
    TCLAP::ValueArg<std::string> hostAddress("", "host", g_hostnameHelpText, false, "localhost", "IP/FQDN");
    switch (x)
    {
        case 'p':
            break;
        case 'a':
            break;
    }
}

void Other()
{
    TCLAP::SwitchArg json("j", "json", "not health's", cmd, false);
}
'''


def test_defines_and_enum_members_by_name() -> None:
    assert derive_cpp.c_defines(CPP, ["DCGM_HE_PORT_NUMBER", "OVERALL_HEALTH_TAG"]) == {
        "DCGM_HE_PORT_NUMBER": "5555", "OVERALL_HEALTH_TAG": "Overall Health"}
    assert derive_cpp.c_enum_values(CPP, ["DCGM_HEALTH_RESULT_WARN", "DCGM_ST_GENERIC_ERROR"]) == {
        "DCGM_HEALTH_RESULT_WARN": 10, "DCGM_ST_GENERIC_ERROR": -3}
    with pytest.raises(KeyError, match="NOT_A_STRING"):
        derive_cpp.c_defines(CPP, ["NOT_A_STRING"])


def test_returns_flags_and_cases_stay_inside_their_function() -> None:
    assert derive_cpp.cpp_returns(CPP, "HelperHealthToString") == {"DCGM_HEALTH_RESULT_PASS": "Healthy",
                                                                    "DCGM_HEALTH_RESULT_WARN": "Warning"}
    assert derive_cpp.tclap_args(CPP, "ProcessHealthCommandLine") == [
        {"short": "g", "long": "group"}, {"short": "c", "long": "check"}, {"short": "", "long": "host"}]
    assert derive_cpp.cpp_char_cases(CPP, "ProcessHealthCommandLine") == ["p", "a"]
    with pytest.raises(KeyError, match="Nope"):
        derive_cpp.cpp_body(CPP, "Nope")


def test_json_subscripts() -> None:
    text = 'Json::Value &c = json["body"][name];\njsonHeader.append(x);\njson["value"] = str; x["nope"];'
    assert derive_cpp.json_subscripts(text) == ["body", "value"]


def test_dockerfile_args_keep_the_first_default() -> None:
    text = 'ARG A=1\nARG B\nARG C="x y"\nFROM base AS one\nARG A=2\nARG B=3\n'
    assert derive_cpp.dockerfile_facts(text)["args"] == {"A": "1", "C": "x y", "B": "3"}


def test_dockerfile_facts() -> None:
    text = ("# comment: FROM nothing\nFROM nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04\nARG V\n"
            "RUN apt-get update \\\n && apt-get install --assume-yes pkg-a=1:${V} \\\n"
            " && apt-get install --assume-yes --no-install-recommends pkg-b \\\n && apt-get purge -y x\n"
            "EXPOSE 5555\nENTRYPOINT [\"/usr/bin/nv-hostengine\"]\nCMD [\"-n\", \"-b\", \"0.0.0.0\"]\n")
    assert derive_cpp.dockerfile_facts(text) == {
        "from": ["nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04"], "apt": ["pkg-a", "pkg-b"],
        "entrypoint": ["/usr/bin/nv-hostengine"], "cmd": ["-n", "-b", "0.0.0.0"], "expose": [5555],
        "args": {}}
