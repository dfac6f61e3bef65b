from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse


@login_required
def upload(request: HttpRequest) -> HttpResponse:
    return HttpResponse("upload")


@login_required
def jobs(request: HttpRequest) -> HttpResponse:
    return HttpResponse("jobs")


@login_required
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    return HttpResponse("job")
